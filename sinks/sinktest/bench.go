package sinktest

import (
	"context"
	"testing"

	"kollect.dev/kollect/pipeline/model/rows"
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
