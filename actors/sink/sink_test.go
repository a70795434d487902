package sink_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	testingclock "k8s.io/utils/clock/testing"

	"kollect.dev/kollect/actors"
	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/internal/eventually"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// flakyBackend records what it was asked to store; it fails while down and
// can be made slow to let offers pile up.
type flakyBackend struct {
	mu       sync.Mutex
	down     bool
	gate     chan struct{}
	exported []string
}

func (b *flakyBackend) Export(ctx context.Context, snap *rows.Snapshot) (sinks.Ack, error) {
	if b.gate != nil {
		<-b.gate
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down {
		return sinks.Ack{}, errors.New("connection refused")
	}
	b.exported = append(b.exported, snap.Checksum)
	return sinks.Ack{Rows: len(snap.Rows), Changed: true}, nil
}

func (b *flakyBackend) setDown(v bool) { b.mu.Lock(); b.down = v; b.mu.Unlock() }
func (b *flakyBackend) got() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.exported...)
}

func snapshot(t *testing.T, names ...string) *rows.Snapshot {
	t.Helper()
	var rs []*rows.Row
	for _, n := range names {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "ns", TargetName: "t", Version: "v1", Kind: "ConfigMap"}, Namespace: "ns", Name: n, UID: n}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rows.NewSnapshot(rows.Identity{Namespace: "ns", Name: "inv", Generation: 1}, rs, time.Now())
}

// harness spawns the sink actor under a parent that collects Results.
func harness(t *testing.T, cfg sink.Config) (*actor.ActorSystem, *actor.PID, chan *sink.Result) {
	t.Helper()
	return harnessWith(t, cfg, nil)
}

// harnessWith is harness with the actor's metrics.
func harnessWith(t *testing.T, cfg sink.Config, metrics *actors.Metrics) (*actor.ActorSystem, *actor.PID, chan *sink.Result) {
	t.Helper()
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	results := make(chan *sink.Result, 100)
	childCh := make(chan *actor.PID, 1)
	parent := actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *actor.Started:
			childCh <- ctx.Spawn(sink.Props(cfg, &sink.Slot{}, metrics))
		case *sink.Result:
			results <- m
		}
	})
	sys.Root.Spawn(parent)
	return sys, <-childCh, results
}

func next(t *testing.T, ch chan *sink.Result) *sink.Result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no export result within 10s")
		return nil
	}
}

// Back-off and the circuit run on the binding's clock: a failed export is
// retried only once its delay has passed, the circuit opens after
// OpenAfter failures, and a snapshot offered meanwhile replaces the one
// waiting.
func TestOutageOpensTheCircuitAndRecoveryCatchesUp(t *testing.T) {
	be := &flakyBackend{down: true}
	clk := testingclock.NewFakeClock(time.Unix(1_800_000_000, 0))
	sys, pid, results := harness(t, sink.Config{Key: "snapshot/git", Backend: sinks.Whole(be),
		BackoffBase: 10 * time.Second, BackoffMax: 40 * time.Second, OpenAfter: 2, Clock: clk})
	snap := snapshot(t, "a", "b")
	sys.Root.Send(pid, &sink.Offer{Snapshot: snap})

	r := next(t, results)
	if r.Err == nil || r.Circuit != sink.Closed || r.Failures != 1 {
		t.Fatalf("first failure: want error with circuit Closed, got %+v", r)
	}
	retryAfter := r.RetryAfter
	if retryAfter <= 0 || retryAfter > 10*time.Second {
		t.Fatalf("first retry delay %s outside (0, 10s]", retryAfter)
	}
	eventually.True(t, 5*time.Second, "the retry timer is set", clk.HasWaiters)
	clk.Step(retryAfter - time.Millisecond)
	if !clk.HasWaiters() || len(results) > 0 {
		t.Fatalf("retried %s before its delay of %s", retryAfter-time.Millisecond, retryAfter)
	}
	clk.Step(time.Millisecond)
	r = next(t, results)
	if r.Err == nil || r.Circuit != sink.Open {
		t.Fatalf("second failure: want the circuit Open, got %+v", r)
	}
	if r.RetryAfter <= 0 || r.RetryAfter > 40*time.Second {
		t.Errorf("retry delay %s outside (0, 40s]", r.RetryAfter)
	}
	// A newer snapshot arrives during the outage; it replaces the old one.
	newer := snapshot(t, "a", "b", "c")
	sys.Root.Send(pid, &sink.Offer{Snapshot: newer})
	be.setDown(false)
	eventually.True(t, 5*time.Second, "the second retry timer is set", clk.HasWaiters)
	clk.Step(r.RetryAfter)
	r = next(t, results)
	if r.Err != nil || r.Circuit != sink.Closed || r.Ack.Rows != 3 {
		t.Fatalf("after recovery: want circuit Closed and 3 rows acknowledged, got %+v", r)
	}
	if got := be.got(); len(got) != 1 || got[0] != newer.Checksum {
		t.Fatalf("want only the newest snapshot exported once, got %v", got)
	}
}

func TestNewestSnapshotReplacesUnsentOnesAndDuplicatesAreSkipped(t *testing.T) {
	be := &flakyBackend{gate: make(chan struct{})}
	sys, pid, results := harness(t, sink.Config{Key: "snapshot/git", Backend: sinks.Whole(be)})
	first, second, third := snapshot(t, "a"), snapshot(t, "a", "b"), snapshot(t, "a", "b", "c")
	sys.Root.Send(pid, &sink.Offer{Snapshot: first})
	sys.Root.Send(pid, &sink.Offer{Snapshot: second}) // first is in flight
	sys.Root.Send(pid, &sink.Offer{Snapshot: third})  // replaces second
	close(be.gate)
	next(t, results)
	next(t, results)
	sys.Root.Send(pid, &sink.Offer{Snapshot: third}) // already held: no export
	select {
	case r := <-results:
		t.Fatalf("an unchanged snapshot was exported again: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	if got := be.got(); len(got) != 2 || got[0] != first.Checksum || got[1] != third.Checksum {
		t.Fatalf("want first then third exported, got %v", got)
	}
}

// The heartbeat: content the sink holds is exported again only once the
// binding's interval has passed on its clock.
func TestUnchangedSnapshotIsReExportedOnlyAfterTheInterval(t *testing.T) {
	be := &flakyBackend{}
	clk := testingclock.NewFakeClock(time.Unix(1_800_000_000, 0))
	sys, pid, results := harness(t, sink.Config{Key: "snapshot/git", Backend: sinks.Whole(be), Interval: 5 * time.Minute, Clock: clk})
	snap := snapshot(t, "a")
	sys.Root.Send(pid, &sink.Offer{Snapshot: snap})
	first := next(t, results)
	sys.Root.Send(pid, &sink.Offer{Snapshot: snap}) // same content, within the interval
	eventually.True(t, 5*time.Second, "the heartbeat timer is set", clk.HasWaiters)
	clk.Step(5*time.Minute - time.Second)
	if !clk.HasWaiters() || len(results) > 0 {
		t.Fatal("unchanged content re-exported before the interval")
	}
	clk.Step(time.Second)
	second := next(t, results)
	if gap := second.At.Sub(first.At); gap != 5*time.Minute {
		t.Fatalf("unchanged content re-exported %s after the first export, want the 5m interval", gap)
	}
	if got := be.got(); len(got) != 2 || got[0] != got[1] {
		t.Fatalf("want the same snapshot exported twice (heartbeat), got %v", got)
	}
}

type panickyBackend struct{ flakyBackend }

func (p *panickyBackend) Export(ctx context.Context, snap *rows.Snapshot) (sinks.Ack, error) {
	p.mu.Lock()
	first := len(p.exported) == 0 && !p.down
	p.down = true // panic only once
	p.mu.Unlock()
	if first {
		panic("boom")
	}
	p.setDown(false)
	return p.flakyBackend.Export(ctx, snap)
}

func TestABackendPanicIsAnErrorAndTheBindingRecovers(t *testing.T) {
	be := &panickyBackend{}
	sys, pid, results := harness(t, sink.Config{Key: "snapshot/git", Backend: sinks.Whole(be), BackoffBase: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	sys.Root.Send(pid, &sink.Offer{Snapshot: snapshot(t, "a")})
	r := next(t, results)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "panicked: boom") {
		t.Fatalf("want the panic reported as an error, got %+v", r)
	}
	if r = next(t, results); r.Err != nil || r.Ack.Rows != 1 {
		t.Fatalf("want the retry to succeed, got %+v", r)
	}
}

// deltaBackend records each delta it is handed; it fails the attempts
// listed in failing (1-based).
type deltaBackend struct {
	mu      sync.Mutex
	failing map[int]bool
	got     []*rows.Delta
}

func (b *deltaBackend) Export(_ context.Context, d *rows.Delta) (sinks.Ack, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, d)
	if b.failing[len(b.got)] {
		return sinks.Ack{}, errors.New("published half of it, then the connection dropped")
	}
	return sinks.Ack{Rows: len(d.Next.Rows)}, nil
}

// A failed export may have written part of its delta: its retry reconciles
// against the backend (a full delta) under the same export id, and the
// next export, even of a change seen before (A→B→A→B), gets a new id.
func TestAFailedExportIsRetriedInFullUnderItsIDAndLaterExportsGetNewIDs(t *testing.T) {
	be := &deltaBackend{failing: map[int]bool{2: true}}
	sys, pid, results := harness(t, sink.Config{Key: "event/nats", Backend: be, BackoffBase: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	a, b := snapshot(t, "a"), snapshot(t, "a", "b")
	for _, s := range []*rows.Snapshot{a, b} {
		sys.Root.Send(pid, &sink.Offer{Snapshot: s})
		for next(t, results).Err != nil { //nolint:revive // until an export succeeds
		}
	}
	a2, b2 := snapshot(t, "a"), snapshot(t, "a", "b") // the same contents again
	for _, s := range []*rows.Snapshot{a2, b2} {
		sys.Root.Send(pid, &sink.Offer{Snapshot: s})
		for next(t, results).Err != nil { //nolint:revive // until an export succeeds
		}
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	if len(be.got) != 5 {
		t.Fatalf("want 5 attempts (a, b failed, b retried, a, b), got %d", len(be.got))
	}
	first, failed, retried := be.got[0], be.got[1], be.got[2]
	if !first.Full() || failed.Full() || len(failed.Upserts) != 1 {
		t.Fatalf("want a full first export and a one-row delta after it; got full=%v, then full=%v with %d upserts", first.Full(), failed.Full(), len(failed.Upserts))
	}
	if !retried.Full() || retried.Export != failed.Export {
		t.Fatalf("the retry of a failed export must be full and keep its id: full=%v id %q vs %q", retried.Full(), retried.Export, failed.Export)
	}
	ids := map[string]bool{}
	for _, i := range []int{0, 1, 3, 4} {
		ids[be.got[i].Export] = true
	}
	if len(ids) != 4 || be.got[3].Full() || be.got[4].Full() {
		t.Fatalf("want four exports with four ids, deltas after success; ids %v", ids)
	}
}

// logLines records the messages an slog logger writes.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Message)
	return nil
}
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logLines) WithGroup(string) slog.Handler      { return l }
func (l *logLines) matching(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.lines {
		if m == msg {
			n++
		}
	}
	return n
}

func (l *logLines) circuit() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.lines {
		if strings.HasPrefix(m, "sink circuit ") {
			out = append(out, strings.Fields(m)[2])
		}
	}
	return out
}

func TestEachCircuitTransitionIsLoggedOnce(t *testing.T) {
	logs := &logLines{}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(logs) }))
	t.Cleanup(sys.Shutdown)
	be := &flakyBackend{down: true}
	results := make(chan *sink.Result, 100)
	var child *actor.PID
	started := make(chan struct{})
	sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *actor.Started:
			child = ctx.Spawn(sink.Props(sink.Config{Key: "snapshot/git", Backend: sinks.Whole(be),
				BackoffBase: 5 * time.Millisecond, BackoffMax: 10 * time.Millisecond, OpenAfter: 2}, &sink.Slot{}, nil))
			close(started)
		case *sink.Result:
			results <- m
		}
	}))
	<-started
	sys.Root.Send(child, &sink.Offer{Snapshot: snapshot(t, "a")})
	// Four failures: Closed (1), Open (2), then half-open probes that fail.
	for range 4 {
		if r := next(t, results); r.Err == nil {
			t.Fatal("an export succeeded while the sink was down")
		}
	}
	be.setDown(false)
	for r := next(t, results); r.Err != nil; r = next(t, results) { //nolint:revive // until an export succeeds
	}
	if failed := logs.matching("sink export failed: retrying"); failed != 1 {
		t.Errorf("the failure streak was logged %d times, want once", failed)
	}
	got := strings.Join(logs.circuit(), " ")
	// opened once, then half-open/opened per failed probe, one close: never
	// the same state twice in a row, never a line per failed attempt
	// while open.
	if !strings.HasPrefix(got, "opened: half-open: opened:") || !strings.HasSuffix(got, "half-open: closed:") {
		t.Fatalf("circuit log %q", got)
	}
	f := logs.circuit()
	for i := 1; i < len(f); i++ {
		if f[i] == f[i-1] {
			t.Fatalf("state %s logged twice in a row: %q", f[i], got)
		}
	}
}

// An offer of content the sink already holds is skipped and counted as
// upstream's debounce (kollect_export_debounced_total); a change is not.
func TestOffersOfHeldContentAreCountedAsDebounced(t *testing.T) {
	reg := prometheus.NewRegistry()
	metrics := actors.NewMetrics(reg)
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	be := &flakyBackend{}
	results := make(chan *sink.Result, 10)
	started := make(chan *actor.PID, 1)
	sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *actor.Started:
			started <- ctx.Spawn(sink.Props(sink.Config{Inventory: "ns/inv", Key: "snapshot/git", Backend: sinks.Whole(be), Interval: time.Hour}, &sink.Slot{}, metrics))
		case *sink.Result:
			results <- m
		}
	}))
	pid := <-started
	first := snapshot(t, "a")
	sys.Root.Send(pid, &sink.Offer{Snapshot: first})
	next(t, results)
	sys.Root.Send(pid, &sink.Offer{Snapshot: snapshot(t, "a")}) // same content, a new snapshot
	sys.Root.Send(pid, &sink.Offer{Snapshot: snapshot(t, "a", "b")})
	next(t, results)
	got := testutil.ToFloat64(metrics.DebouncedCounter("KollectInventory"))
	if got != 1 {
		t.Fatalf("kollect_export_debounced_total = %v, want 1 (the same content offered again)", got)
	}
	if n := len(be.got()); n != 2 {
		t.Errorf("%d exports, want 2 (the skipped offer wrote nothing)", n)
	}
}

// conflictBackend reports pushes another writer beat: acknowledged after
// three rebuilds, then failed after two.
type conflictBackend struct{ calls int }

func (b *conflictBackend) Export(context.Context, *rows.Snapshot) (sinks.Ack, error) {
	b.calls++
	if b.calls == 1 {
		return sinks.Ack{Changed: true, Conflicts: 3}, nil
	}
	return sinks.Ack{Conflicts: 2}, errors.New("failed to update ref")
}

// The writes another writer beat count in kollect_export_conflicts_total,
// whether the export then landed or failed.
func TestConflictsAreCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	metrics := actors.NewMetrics(reg)
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	results := make(chan *sink.Result, 10)
	started := make(chan *actor.PID, 1)
	sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *actor.Started:
			started <- ctx.Spawn(sink.Props(sink.Config{Inventory: "ns/inv", Key: "snapshot/git", Type: "git", Backend: sinks.Whole(&conflictBackend{}),
				BackoffBase: time.Hour, BackoffMax: time.Hour}, &sink.Slot{}, metrics))
		case *sink.Result:
			results <- m
		}
	}))
	pid := <-started
	sys.Root.Send(pid, &sink.Offer{Snapshot: snapshot(t, "a")})
	if r := next(t, results); r.Err != nil {
		t.Fatal(r.Err)
	}
	sys.Root.Send(pid, &sink.Offer{Snapshot: snapshot(t, "a", "b")})
	if r := next(t, results); r.Err == nil {
		t.Fatal("the second export should fail")
	}
	n, err := testutil.GatherAndCount(reg, "kollect_export_conflicts_total")
	if err != nil || n != 1 {
		t.Fatalf("series: %d, %v", n, err)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "kollect_export_conflicts_total" {
			if got := mf.GetMetric()[0].GetCounter().GetValue(); got != 5 {
				t.Fatalf("kollect_export_conflicts_total = %v, want 5 (3 rebuilds that landed, 2 that did not)", got)
			}
		}
	}
}

// slowBackend takes cost for every export and records when each ended.
type slowBackend struct {
	cost time.Duration
	mu   sync.Mutex
	ends []time.Time
	last string
}

func (b *slowBackend) Export(ctx context.Context, snap *rows.Snapshot) (sinks.Ack, error) {
	time.Sleep(b.cost)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ends, b.last = append(b.ends, time.Now()), snap.Checksum
	return sinks.Ack{Rows: len(snap.Rows), Changed: true}, nil
}

func (b *slowBackend) exports() (int, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.ends), b.last
}

// TestExportsUnderConstantChangeTakeHalfTheTime: a binding whose content
// changes every 5 ms, with exports that take 100 ms, exports back to back
// until its budget (1 s) is spent, then waits as long as each export took,
// each export carrying every change made meanwhile; the last state is
// exported soon after the changes stop, and a change after a quiet spell
// exports at once.
func TestExportsUnderConstantChangeTakeHalfTheTime(t *testing.T) {
	be := &slowBackend{cost: 100 * time.Millisecond}
	metrics := actors.NewMetrics(prometheus.NewRegistry())
	sys, pid, _ := harnessWith(t, sink.Config{Inventory: "ns/inv", Key: "snapshot/git", Type: "git", Backend: sinks.Whole(be)}, metrics)
	start := time.Now()
	var last *rows.Snapshot
	for i := 0; time.Since(start) < 4*time.Second; i++ {
		last = snapshot(t, "a", strings.Repeat("b", i+1))
		sys.Root.Send(pid, &sink.Offer{Snapshot: last})
		time.Sleep(5 * time.Millisecond)
	}
	n, _ := be.exports()
	// Back to back: 4 s / 100 ms = 40 exports. Paced: the burst's 1 s (10
	// exports), then half of the 3 s left (15), and one more the budget
	// let start out of debt.
	if n > 32 {
		t.Fatalf("%d exports of 100 ms in 4 s of constant change: not paced (back to back is about 40, half the time about 26)", n)
	}
	if n < 18 {
		t.Fatalf("only %d exports of 100 ms in 4 s: held back more than the budget says", n)
	}
	// The waits are counted: about half of the 3 s after the burst.
	if waited := testutil.ToFloat64(metrics.PacedCounter("git")); waited < 0.5 || waited > 3 {
		t.Fatalf("kollect_export_paced_seconds_total = %.2f s, want about 1.5 s", waited)
	}
	deadline := time.Now().Add(3 * time.Second)
	for _, got := be.exports(); got != last.Checksum; _, got = be.exports() {
		if time.Now().After(deadline) {
			t.Fatal("the last state was not exported within 3 s of the last change")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // quiet: the budget fills again
	before, _ := be.exports()
	changed := time.Now()
	sys.Root.Send(pid, &sink.Offer{Snapshot: snapshot(t, "after a quiet spell")})
	for n, _ := be.exports(); n == before; n, _ = be.exports() {
		if time.Since(changed) > 500*time.Millisecond {
			t.Fatal("a change after a quiet spell waited")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
