//go:build integration

package postgres_test

import (
	"testing"

	"kollect.dev/kollect/internal/servers/pgtest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/sinks/postgres"
)

func benchSink(b *testing.B) *postgres.Sink {
	srv := pgtest.Start(b)
	s, err := postgres.New(postgres.Config{DSN: srv.DSN(""), Table: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}

// BenchmarkFirstExport100k: 100,000 rows into an empty inventory (COPY,
// merge, delete reconciliation and count in one transaction).
func BenchmarkFirstExport100k(b *testing.B) { sinktest.BenchFirstExport(b, benchSink(b), 100_000) }

// BenchmarkChanged1kOf100k: 1,000 changed rows in an inventory of 100,000
// that the sink already holds.
func BenchmarkChanged1kOf100k(b *testing.B) { sinktest.BenchChangedOf(b, benchSink(b), 100_000, 1000) }
