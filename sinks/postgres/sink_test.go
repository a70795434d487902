//go:build integration

package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"kollect.dev/kollect/internal/servers/pgtest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/postgres"
)

func query(t *testing.T, srv *pgtest.Server, sql string, args ...any) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rs, err := conn.Query(ctx, sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newSink(t *testing.T, cfg postgres.Config) *postgres.Sink {
	t.Helper()
	s, err := postgres.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestPostgresConformance(t *testing.T) {
	srv := pgtest.Start(t)
	const table = `"public"."inventory_items"`
	scope := ` WHERE inventory_namespace = $1 AND inventory_name = $2 AND cluster = $3`
	sinktest.Run(t, sinktest.Harness{
		New: func(t *testing.T, cluster string) sinks.Backend {
			return newSink(t, postgres.Config{DSN: srv.DSN(""), Table: "inventory_items", Cluster: cluster})
		},
		State: func(t *testing.T, id rows.Identity, cluster string) []string {
			return query(t, srv, `SELECT payload::text FROM `+table+scope, id.Namespace, id.Name, cluster)
		},
		Version: func(t *testing.T, id rows.Identity, cluster string) string {
			return strings.Join(query(t, srv, `SELECT target_name || '/' || source_uid || '@' || xmin::text FROM `+table+scope+
				` ORDER BY target_name, source_uid`, id.Namespace, id.Name, cluster), ",")
		},
		Stop: func(*testing.T) { srv.Stop() },
		Start: func(t *testing.T) {
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
		},
	})
}
