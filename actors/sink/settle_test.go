package sink_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	testingclock "k8s.io/utils/clock/testing"

	"kollect.dev/kollect/actors"
	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/internal/eventually"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// costlyBackend takes cost on the binding's fake clock for every export.
type costlyBackend struct {
	clk  *testingclock.FakeClock
	cost time.Duration
}

func (b *costlyBackend) Export(context.Context, *rows.Snapshot) (sinks.Ack, error) {
	b.clk.Step(b.cost)
	return sinks.Ack{Changed: true}, nil
}

// An export the budget holds back waits only while newer snapshots keep
// coming: once the latest has stayed the latest for the settle time, it
// starts, however much of the budget's wait is left, so the last state
// of a burst is not held seconds after the changes stopped.
func TestAPacedExportStartsOnceTheChangesStop(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_800_000_000, 0))
	metrics := actors.NewMetrics(prometheus.NewRegistry())
	sys, pid, results := harnessWith(t, sink.Config{Inventory: "ns/inv", Key: "snapshot/git", Type: "git",
		Backend: sinks.Whole(&costlyBackend{clk: clk, cost: 4 * time.Second}), Clock: clk}, metrics)
	// Three exports of 4 s back to back: the budget (1 s, or the last
	// export's cost, filling at half the time) is then 4 s in debt.
	for i := range 3 {
		sys.Root.Send(pid, &sink.Offer{Snapshot: snapshot(t, "burst", string(rune('a'+i)))})
		if r := next(t, results); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	step := func(d time.Duration) {
		t.Helper()
		eventually.True(t, 5*time.Second, "the pacing timer is set", clk.HasWaiters)
		clk.Step(d)
	}
	expectNone := func(when string) {
		t.Helper()
		select {
		case r := <-results:
			t.Fatalf("exported %s: %+v", when, r)
		case <-time.After(100 * time.Millisecond):
		}
	}
	sys.Root.Send(pid, &sink.Offer{Snapshot: snapshot(t, "changing")})
	step(200 * time.Millisecond)
	last := snapshot(t, "changing", "still") // 200 ms later: the changes go on
	sys.Root.Send(pid, &sink.Offer{Snapshot: last})
	expectNone("while the changes went on")
	step(100 * time.Millisecond) // the first snapshot would have settled now
	expectNone("300 ms after a snapshot that another replaced 100 ms ago")
	step(200 * time.Millisecond) // the latest has settled
	r := next(t, results)
	if r.Err != nil || r.Snapshot.Checksum != last.Checksum {
		t.Fatalf("after the changes stopped: %+v, want the latest snapshot exported", r)
	}
	// Held 500 ms in all, not the budget's 4 s.
	if waited := testutil.ToFloat64(metrics.PacedCounter("git")); waited != 0.5 {
		t.Fatalf("kollect_export_paced_seconds_total = %v s, want 0.5", waited)
	}
}
