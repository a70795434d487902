package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks/postgres"
	"kollect.dev/kollect/sinks/postgres/pgtest"
	"kollect.dev/kollect/sinks/sinktest"
)

// BenchmarkFirstExport100k: 100,000 rows into an empty inventory (COPY,
// merge, delete reconciliation and count in one transaction).
func BenchmarkFirstExport100k(b *testing.B) {
	srv := pgtest.Start(b)
	s, err := postgres.New(postgres.Config{DSN: srv.DSN(""), Table: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rs := sinktest.Rows(100_000, "1")
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		snap := sinktest.Snap(rows.Identity{Namespace: "bench", Name: fmt.Sprintf("first-%d", i)}, rs)
		ack, err := s.Export(ctx, rows.Diff(nil, snap))
		if err != nil || ack.Rows != len(rs) {
			b.Fatalf("%d rows, %v", ack.Rows, err)
		}
	}
	b.ReportMetric(float64(len(rs)*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkChanged1kOf100k: 1,000 changed rows in an inventory of 100,000
// that the sink already holds.
func BenchmarkChanged1kOf100k(b *testing.B) {
	srv := pgtest.Start(b)
	s, err := postgres.New(postgres.Config{DSN: srv.DSN(""), Table: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	id := rows.Identity{Namespace: "bench", Name: "changed"}
	base := sinktest.Rows(100_000, "1")
	bind := &sinktest.Binding{Backend: s}
	if _, err := bind.Export(ctx, sinktest.Snap(id, base)); err != nil {
		b.Fatal(err)
	}
	versions := [2][]*rows.Row{sinktest.Rows(1000, "2"), sinktest.Rows(1000, "3")}
	snaps := [2]*rows.Snapshot{}
	for v := range versions {
		next := append(append([]*rows.Row{}, versions[v]...), base[1000:]...)
		snaps[v] = sinktest.Snap(id, next)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		ack, err := bind.Export(ctx, snaps[i%2])
		if err != nil || ack.Written != 1000 || ack.Rows != 100_000 {
			b.Fatalf("wrote %d, holds %d: %v", ack.Written, ack.Rows, err)
		}
	}
}
