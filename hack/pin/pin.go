//go:build pin

// Package pin keeps the libraries of Kollect's committed design in go.mod
// at their verified versions until code imports them, so that `go mod tidy`
// neither drops them nor re-adds them later at @latest. The build tag keeps
// it out of every binary.
package pin

import (
	_ "cloud.google.com/go/bigquery"
	_ "github.com/asynkron/protoactor-go/actor"
	_ "github.com/go-git/go-git/v5"
	_ "github.com/google/cel-go/cel"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/nats-io/nats.go"
	_ "github.com/parquet-go/parquet-go"
	_ "github.com/twmb/franz-go/pkg/kgo"
	_ "go.mongodb.org/mongo-driver/v2/mongo"
	_ "go.opentelemetry.io/otel"
	_ "gocloud.dev/blob"
	_ "k8s.io/client-go/dynamic"
)
