package actors

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

// Tracer returns the engine's tracer. Spans go to the process's
// OpenTelemetry tracer provider: a no-op (and free) unless the manager
// configured an exporter from the OTEL_* environment.
func Tracer() trace.Tracer { return otel.Tracer("kollect.dev/kollect/actors") }

// Span attribute keys shared by the actors.
const (
	AttrTarget    = "kollect.target"
	AttrInventory = "kollect.inventory"
	AttrBinding   = "kollect.binding"
	AttrSinkType  = "kollect.sink.type"
)
