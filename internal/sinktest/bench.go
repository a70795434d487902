package sinktest

import (
	"context"
	"fmt"
	"testing"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// BenchChanges measures how many row changes per second a backend takes:
// every iteration changes all n rows of an inventory the backend already
// holds, so an event backend publishes n messages.
func BenchChanges(b *testing.B, backend sinks.Backend, n int) {
	ctx := context.Background()
	id := rows.Identity{Namespace: "bench", Name: "changes"}
	bind := &Binding{Backend: backend}
	if _, err := bind.Export(ctx, Snap(id, Rows(n, "0"))); err != nil {
		b.Fatal(err)
	}
	snaps := [2]*rows.Snapshot{Snap(id, Rows(n, "1")), Snap(id, Rows(n, "2"))}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		ack, err := bind.Export(ctx, snaps[i%2])
		if err != nil || ack.Written != n {
			b.Fatalf("wrote %d of %d changes: %v", ack.Written, n, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "changes/s")
}

// BenchFirstExport measures the export of n rows into an inventory the
// backend does not hold yet, as after a first start (a full delta).
func BenchFirstExport(b *testing.B, backend sinks.Backend, n int) {
	ctx := context.Background()
	rs := Rows(n, "1")
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		snap := Snap(rows.Identity{Namespace: "bench", Name: fmt.Sprintf("first-%d", i)}, rs)
		ack, err := backend.Export(ctx, rows.Diff(nil, snap))
		if err != nil || ack.Rows != n {
			b.Fatalf("holds %d of %d rows: %v", ack.Rows, n, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchChangedOf measures an export where changed rows of an inventory of
// n rows, which the backend already holds, have changed.
func BenchChangedOf(b *testing.B, backend sinks.Backend, n, changed int) {
	ctx := context.Background()
	id := rows.Identity{Namespace: "bench", Name: "changed"}
	base := Rows(n, "1")
	bind := &Binding{Backend: backend}
	if _, err := bind.Export(ctx, Snap(id, base)); err != nil {
		b.Fatal(err)
	}
	var snaps [2]*rows.Snapshot
	for v, version := range []string{"2", "3"} {
		snaps[v] = Snap(id, append(Rows(changed, version), base[changed:]...))
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		ack, err := bind.Export(ctx, snaps[i%2])
		if err != nil || ack.Written != changed || ack.Rows != n {
			b.Fatalf("wrote %d of %d changes, holds %d of %d: %v", ack.Written, changed, ack.Rows, n, err)
		}
	}
}
