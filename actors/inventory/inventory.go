package inventory

import (
	"maps"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"

	"kollect.dev/kollect/actors"
	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/actors/pace"
	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// Config is an inventory's desired state.
type Config struct {
	// Kind is the owner's kind (KollectInventory or
	// KollectClusterInventory); reports carry it.
	Kind     string
	ID       rows.Identity
	Bindings []sink.Config
	// Sources are the running target actors whose rows the inventory reads.
	Sources []Source
	// Missing are targets that exist but do not run yet (a restart, a
	// target that cannot start): the inventory does not export until they
	// run and have listed their objects, so it never exports a state it has
	// not fully observed.
	Missing []messages.TargetRef
	// Refused are the Missing targets the operator refused to run (one
	// degraded since before it ever ran): waiting for them is news at
	// once, not part of settling after a start.
	Refused     []messages.TargetRef
	BatchWindow time.Duration
	// DedupeByUID keeps one row per object when several targets collect it
	// (KollectClusterInventory dedupe: byResourceUID).
	DedupeByUID bool
	// TargetNamespaces limits the rows taken from targets (nil: all).
	TargetNamespaces map[string]bool
	// Shards reports per-namespace row counts (cluster inventories).
	Shards bool
	// SettleGrace is how long after it starts the inventory reports that
	// it is settling (Report.Settling); 0 is settleGrace.
	SettleGrace time.Duration
	// Publish builds a snapshot of every complete state even when no sink
	// is bound, and hands it on in Report.Snapshot (the read API serves
	// it).
	Publish bool
}

// Source is a running target actor the inventory subscribes to for rows.
type Source struct {
	Ref messages.TargetRef
	PID *actor.PID
}

// Configure replaces the configuration: bindings are spawned or stopped,
// targets subscribed or dropped.
type Configure struct{ Config *Config }

// BindingReport is the last outcome of one binding.
type BindingReport struct {
	Key          string
	LastExport   time.Time
	LastChecksum string
	Exported     int
	// Written and Bytes are what the last acknowledged export wrote: rows,
	// messages or files, and their bytes.
	Written int
	Bytes   int64
	// Parts is how many parts a snapshot binding's export was split into
	// by its size ceiling (0 for database and event bindings).
	Parts int
	// Rejected counts the rows the backend set aside in the last
	// acknowledged export; RejectedKeys names the first few, and Reason
	// says why for the first.
	Rejected       int
	RejectedKeys   []string
	RejectedReason string
	Err            string
	Permanent      bool
	Circuit        sink.Circuit
	Failures       int
	// Partial says the last acknowledged export kept the rows of targets
	// that had not listed as the sink holds them (rows.Snapshot.Keep):
	// Exported and LastChecksum count only the others' rows, not what the
	// sink holds.
	Partial bool
	// Waits says the binding exports nothing until every target has
	// listed: its sink holds no export of this manager's, and its backend
	// cannot keep the other targets' rows apart (a document layout).
	Waits bool
}

// Report is the inventory's observed state.
type Report struct {
	Kind      string
	ID        rows.Identity
	ItemCount int
	Bindings  []BindingReport
	// Waiting names the targets whose first full list the inventory still
	// waits for before it exports everything (empty once it does).
	Waiting []string
	// Holding says the bindings that can export the other targets' rows
	// do, keeping what their sinks hold of the Waiting targets unchanged.
	Holding bool
	// Settling says the inventory started less than a grace ago (a
	// manager that has just started): its targets are listing anew, and
	// Waiting is no news (settle.go).
	Settling bool
	// Shards counts rows and targets per target namespace, when asked for.
	Shards []Shard
	// Stopped, when set, says the inventory's actor stopped on its own and
	// why: it exports nothing until it is started again.
	Stopped string
	// Snapshot is the complete state this report announces, built by the
	// export it follows (nil: the report carries no new state). Only a
	// state whose targets have all listed is ever announced.
	Snapshot *rows.Snapshot
}

// Shard is one target namespace's share of the rows.
type Shard struct {
	Namespace string
	Items     int
	Targets   int
	// Checksum is the items fingerprint (rows.Checksum) of the shard's
	// rows in the last snapshot built, "" before the first.
	Checksum string
}

// Reporter receives reports; it must not block.
type Reporter interface {
	InventoryReport(r Report)
}

type flush struct{}

// maxRejectedKeys bounds the rejected row keys a report names.
const maxRejectedKeys = 5

// maxLinks bounds the collect spans one export span links to.
const maxLinks = 32

type binding struct {
	cfg    sink.Config
	pid    *actor.PID
	slot   *sink.Slot
	report BindingReport
	// acked is the last snapshot the sink acknowledged, as results told
	// the inventory (the slot is the sink actor's to read).
	acked *rows.Snapshot
}

type actorState struct {
	reporter Reporter
	metrics  *actors.Metrics
	memory   *Memory
	clock    actors.Clock

	cfg     *Config
	rows    *rowSet
	targets map[messages.TargetRef]*actor.PID
	// listed holds the subscribed targets that have sent their complete row
	// set (a Replace) since they were subscribed.
	listed   map[messages.TargetRef]bool
	bindings map[string]*binding
	// startedAt is when the actor started and initial the targets it read
	// then, for Report.Settling; cancelSettle cancels the grace's end (nil:
	// none pending).
	startedAt    time.Time
	initial      map[messages.TargetRef]bool
	cancelSettle func()
	// cancelFlush cancels the pending flush timer (nil: none pending).
	cancelFlush func()
	dirty       bool
	// links are the collect spans whose changes the next snapshot carries
	// (tracing only; at most maxLinks).
	links []trace.Link
	// budget keeps building snapshots a fifth of the time under constant
	// change, and still lets the end of a burst be exported at once: an
	// export waits, beyond the batch window, until it holds the last
	// build's cost (the next build is likely to cost about as much). The
	// rule before it, waiting four times the last build's cost, held back
	// the export of a burst's final state by four of the burst's builds,
	// measured while the targets' evaluation competed with them for the
	// cores: the cores then sat idle for up to half a second (engine-200k,
	// 2026-12-05).
	budget pace.Budget
	// inBurst holds the targets whose last change said more was waiting,
	// and heldSince when an export that was due was first held for them.
	inBurst   map[messages.TargetRef]bool
	heldSince time.Time
	// holding is set while bindings export the targets that listed and
	// hold the rows of those that have not (exportHolding).
	holding bool
	// shardSums are the shard checksums of the last snapshot built
	// (cluster inventories), by target namespace.
	shardSums map[string]string
}

// maxHold bounds how long an export that is due waits for a target's
// burst to end: a target that never catches up is still exported.
const maxHold = 2 * time.Second

// Props builds the actor's props. Sink children are restarted on failure.
// memory carries the configuration across restarts of the actor; clk is
// the engine's clock (nil: the real one), handed on to its sink actors.
func Props(reporter Reporter, metrics *actors.Metrics, name string, memory *Memory, clk actors.Clock) *actor.Props {
	clk = actors.OrReal(clk)
	return actor.PropsFromProducer(func() actor.Actor {
		return &actorState{reporter: reporter, metrics: metrics, memory: memory, clock: clk, rows: newRowSet(), budget: pace.Budget{Share: buildShare, Burst: buildBurst},
			targets: map[messages.TargetRef]*actor.PID{}, listed: map[messages.TargetRef]bool{}, bindings: map[string]*binding{},
			inBurst: map[messages.TargetRef]bool{}}
	},
		actor.WithMailbox(actor.Unbounded(metrics.Mailbox("inventory", name)...)),
		actor.WithSupervisor(actor.NewOneForOneStrategy(100, time.Minute, actor.DefaultDecider)))
}

func (a *actorState) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		// After a supervised restart, resume at once: subscribing again
		// brings every target's complete list back.
		if cfg := a.memory.config(); cfg != nil {
			a.configure(ctx, cfg)
		}
	case *Configure:
		a.configure(ctx, msg.Config)
	case *messages.RowsChanged:
		if a.targets[msg.Target] == nil {
			return // from a target unsubscribed since
		}
		if msg.Replace && !a.listed[msg.Target] {
			a.listed[msg.Target] = true
			a.dirty = true // the first complete list may be all that was missing
		}
		a.dirty = a.rows.apply(msg) || a.dirty
		if msg.Trace.IsValid() && len(a.links) < maxLinks {
			a.links = append(a.links, trace.Link{SpanContext: msg.Trace})
		}
		if a.burst(msg.Target, msg.More) {
			a.flush(ctx) // the export held for this burst
			return
		}
		a.schedule(ctx)
	case *messages.TargetGone:
		delete(a.targets, msg.Target)
		delete(a.listed, msg.Target)
		delete(a.inBurst, msg.Target)
		a.dirty = a.rows.drop(msg.Target) || a.dirty
		a.schedule(ctx)
	case flush:
		a.cancelFlush = nil // fired
		a.flush(ctx)
	case settleEnded:
		a.cancelSettle = nil // fired
		if !a.observed() {
			a.sendReport()
		}
	case *sink.Result:
		a.result(msg)
	case *actor.Restarting:
		a.stopTimer()
		a.stopSettling() // the restarted actor is a new one: it settles again
	case *actor.Stopping:
		a.stopTimer()
		a.stopSettling()
		for _, pid := range a.targets {
			ctx.Send(pid, &messages.Unsubscribe{Inventory: ctx.Self()})
		}
		if a.cfg != nil {
			a.metrics.InventoryItems(a.cfg.ID.Namespace+"/"+a.cfg.ID.Name, -1)
		}
	}
}

func (a *actorState) configure(ctx actor.Context, cfg *Config) {
	genChanged := a.cfg == nil || a.cfg.ID.Generation != cfg.ID.Generation || a.cfg.DedupeByUID != cfg.DedupeByUID
	filterChanged := a.cfg != nil && !maps.Equal(a.cfg.TargetNamespaces, cfg.TargetNamespaces)
	a.cfg = cfg
	a.memory.remember(cfg)
	a.startSettling(ctx)
	want := map[messages.TargetRef]*actor.PID{}
	for _, t := range cfg.Sources {
		want[t.Ref] = t.PID
	}
	for ref, pid := range a.targets {
		if w := want[ref]; w == nil || !w.Equal(pid) {
			ctx.Send(pid, &messages.Unsubscribe{Inventory: ctx.Self()})
			delete(a.targets, ref)
			delete(a.listed, ref)
			delete(a.inBurst, ref)
			if w == nil {
				// No longer read by this inventory: its rows go.
				a.dirty = a.rows.drop(ref) || a.dirty
			}
		}
	}
	for ref, pid := range want {
		if a.targets[ref] == nil || filterChanged {
			a.targets[ref] = pid
			delete(a.listed, ref) // the answer to this Subscribe is the complete list
			ctx.Send(pid, &messages.Subscribe{Inventory: ctx.Self(), TargetNamespaces: cfg.TargetNamespaces})
		}
	}
	wantB := map[string]sink.Config{}
	for _, b := range cfg.Bindings {
		wantB[b.Key] = b
	}
	for k, b := range a.bindings {
		if nb, ok := wantB[k]; !ok || !sameBinding(b.cfg, nb) {
			ctx.Stop(b.pid)
			delete(a.bindings, k)
			a.memory.forget(k)
		}
	}
	spawned := false
	for k, bc := range wantB {
		if a.bindings[k] == nil {
			spawned = true
			slot := a.memory.slot(k)
			rep := BindingReport{Key: k, Circuit: sink.Closed}
			if slot.Acked != nil { // after a restart: what the sink acknowledged still holds
				rep.LastExport, rep.LastChecksum, rep.Exported = slot.AckedAt, slot.Acked.Checksum, len(slot.Acked.Rows)
			}
			bc.Fence = a.memory.fence(k)
			a.bindings[k] = &binding{cfg: bc, slot: slot, acked: slot.Acked, pid: ctx.Spawn(sink.Props(a.withClock(bc), slot, a.metrics)), report: rep}
		}
	}
	// A binding spawned here (new, or replacing one whose sink was edited
	// or whose Secret rotated) has no snapshot yet: the one its
	// predecessor was exporting went with it. The next flush offers the
	// current rows to every binding; those that acknowledged them skip.
	a.dirty = a.dirty || genChanged || spawned
	a.schedule(ctx)
	if len(cfg.Refused) > 0 {
		a.sendReport() // no longer settling for a target that cannot run
	}
}

// withClock gives a binding's sink actor the inventory's clock.
func (a *actorState) withClock(c sink.Config) sink.Config {
	c.Clock = a.clock
	return c
}

// sameBinding reports whether a running binding can keep its actor: the
// same backend (by id; a binding without one is replaced every time, as
// backends are never compared) with the same settings.
func sameBinding(a, b sink.Config) bool {
	return a.BackendID != "" && a.BackendID == b.BackendID && a.Interval == b.Interval && a.Type == b.Type && a.MaxBytes == b.MaxBytes && a.Partitioned == b.Partitioned
}

const (
	buildShare = 5           // builds take at most 1/buildShare of the time under constant change
	buildBurst = time.Second // the most build time the budget holds
)

// schedule coalesces changes for one batch window, and, when recent
// snapshots used up the build budget, until it holds the last build's
// cost again.
func (a *actorState) schedule(ctx actor.Context) {
	if a.cancelFlush != nil || !a.dirty || a.cfg == nil {
		return
	}
	a.flushIn(ctx, flushAfter(a.cfg.BatchWindow, &a.budget, a.clock.Now()))
}

// flushIn sends the actor a flush after d.
func (a *actorState) flushIn(ctx actor.Context, d time.Duration) {
	a.cancelFlush = actors.SendAfter(a.clock, ctx.ActorSystem().Root, d, ctx.Self(), flush{})
}

// flushAfter is the wait before the next export: the batch window (200 ms
// when unset), or longer while the build budget is short.
func flushAfter(window time.Duration, budget *pace.Budget, now time.Time) time.Duration {
	if window <= 0 {
		window = 200 * time.Millisecond
	}
	return max(window, budget.Wait(now, budget.Last()))
}

// burst records whether a target is in a burst (more events wait behind
// its last change); it reports whether that ended the last burst an
// export was held for.
func (a *actorState) burst(t messages.TargetRef, more bool) bool {
	if more {
		a.inBurst[t] = true
		return false
	}
	delete(a.inBurst, t)
	return len(a.inBurst) == 0 && !a.heldSince.IsZero()
}

// flush exports when the export is due, unless a target is handing over a
// burst: the export then waits for the burst's end (burst), up to maxHold
// since it was due, instead of building snapshots the burst's next slices
// replace at once.
func (a *actorState) flush(ctx actor.Context) {
	a.stopTimer()
	if len(a.inBurst) > 0 && a.dirty {
		now := a.clock.Now()
		if a.heldSince.IsZero() {
			a.heldSince = now
		}
		if wait := maxHold - now.Sub(a.heldSince); wait > 0 {
			a.flushIn(ctx, wait)
			return
		}
	}
	a.heldSince = time.Time{}
	a.export(ctx)
}

func (a *actorState) stopTimer() {
	if a.cancelFlush != nil {
		a.cancelFlush()
		a.cancelFlush = nil
	}
}

// observed reports whether every target the inventory reads runs and has
// sent its complete list (listed only ever holds subscribed targets).
func (a *actorState) observed() bool {
	return len(a.cfg.Missing) == 0 && len(a.listed) == len(a.targets)
}

// waiting lists the targets the inventory has not fully observed: missing
// ones and subscribed ones that have not sent their complete list.
func (a *actorState) waiting() []string {
	if a.observed() {
		return nil
	}
	var out []string
	for _, ref := range a.cfg.Missing {
		out = append(out, ref.String())
	}
	for ref := range a.targets {
		if !a.listed[ref] {
			out = append(out, ref.String())
		}
	}
	slices.Sort(out)
	return out
}

// export builds a snapshot when rows or the generation changed and offers
// it to every binding. Until every target has listed its objects, an
// export of the view would delete the rows of those that have not from the
// sinks: exportHolding exports the others' rows instead, where it can.
func (a *actorState) export(ctx actor.Context) {
	if !a.dirty {
		return
	}
	if !a.observed() {
		a.exportHolding(ctx) // stays dirty: the last list to arrive schedules the full export
		a.sendReport()
		return
	}
	a.holding = false
	a.dirty = false
	for _, b := range a.bindings {
		b.report.Waits = false
	}
	if len(a.bindings) == 0 && !a.cfg.Publish {
		a.sendReport() // nothing to export to: only the count matters
		return
	}
	start := a.clock.Now()
	snap := rows.NewSnapshot(a.cfg.ID, a.rows.list(a.cfg.DedupeByUID), start)
	if a.cfg.Shards {
		a.shardSums = shardChecksums(snap.Rows)
	}
	built := a.clock.Now()
	a.budget.Spend(built.Sub(start), built)
	for _, b := range a.bindings {
		ctx.Send(b.pid, &sink.Offer{Snapshot: snap, Links: a.links})
	}
	a.links = nil
	a.report(snap)
}

// exportHolding exports the rows of the targets that listed while others
// have not (one denied by a scope, a profile typo, a kind that is not
// served). No sink may lose or have rewritten what it holds of the
// targets that have not listed, which nobody has observed:
//   - a binding whose sink acknowledged a complete export since the
//     manager started is offered that export's rows of those targets
//     unchanged beside the others' rows;
//   - a binding without one (after a restart) whose backend can keep
//     targets' rows is offered a partial snapshot (rows.Snapshot.Keep):
//     the others' rows, with the held targets' rows left as the sink
//     holds them;
//   - any other binding cannot know what its sink holds of them, and
//     waits (BindingReport.Waits).
func (a *actorState) exportHolding(ctx actor.Context) {
	held := a.heldTargets()
	start := a.clock.Now()
	var base []*rows.Row
	var partial *rows.Snapshot // one for every binding that keeps
	a.holding = false
	for _, b := range a.bindings {
		b.report.Waits = false
		if base == nil {
			base = a.rows.list(a.cfg.DedupeByUID)
		}
		var snap *rows.Snapshot
		switch {
		case b.acked != nil && !b.acked.Partial():
			snap = rows.NewSnapshot(a.cfg.ID, holding(base, b.acked.Rows, held, a.cfg.DedupeByUID), start)
		case sinks.KeepsTargets(b.cfg.Backend):
			if partial == nil {
				partial = rows.NewSnapshot(a.cfg.ID, holding(base, nil, held, a.cfg.DedupeByUID), start).Keeping(heldNames(held))
			}
			snap = partial
		default:
			b.report.Waits = true
			continue
		}
		ctx.Send(b.pid, &sink.Offer{Snapshot: snap, Links: a.links})
		a.holding = true
	}
	if a.holding {
		a.links = nil
	}
}

// heldNames are the names of held, which a partial snapshot keeps.
func heldNames(held []messages.TargetRef) []string {
	out := make([]string, len(held))
	for i, t := range held {
		out[i] = t.Name
	}
	return out
}

// heldTargets lists the targets that have not listed: missing ones and
// subscribed ones whose complete list has not come.
func (a *actorState) heldTargets() []messages.TargetRef {
	held := slices.Clone(a.cfg.Missing)
	for ref := range a.targets {
		if !a.listed[ref] {
			held = append(held, ref)
		}
	}
	return held
}

// heldBy reports whether r may be a row of one of held: a KollectTarget's
// rows carry its namespace and name, a cluster target's its name (and the
// object's namespace). A row two targets could have sent is held.
func heldBy(r *rows.Row, held []messages.TargetRef) bool {
	for _, t := range held {
		if r.TargetName == t.Name && (t.Namespace == "" || r.TargetNamespace == t.Namespace) {
			return true
		}
	}
	return false
}

// holding is the view's rows that no held target may have sent, with the
// acknowledged rows that one may have, in canonical order (one row per
// object under dedupe).
func holding(view, acked []*rows.Row, held []messages.TargetRef, dedupe bool) []*rows.Row {
	out := make([]*rows.Row, 0, len(view))
	for _, r := range view {
		if !heldBy(r, held) {
			out = append(out, r)
		}
	}
	for _, r := range acked {
		if heldBy(r, held) {
			out = append(out, r)
		}
	}
	if dedupe {
		return firstPerObject(out)
	}
	rows.Sort(out)
	return out
}

func (a *actorState) result(r *sink.Result) {
	b := a.bindings[r.Key]
	if b == nil {
		return
	}
	b.report.Circuit, b.report.Failures = r.Circuit, r.Failures
	if r.Err != nil {
		b.report.Err, b.report.Permanent = r.Err.Error(), r.Permanent
	} else {
		b.acked = r.Snapshot
		b.report.Err, b.report.Permanent = "", false
		b.report.LastExport, b.report.LastChecksum, b.report.Exported = r.At, r.Snapshot.Checksum, r.Ack.Rows
		b.report.Partial = r.Snapshot.Partial()
		b.report.Written, b.report.Bytes, b.report.Parts = r.Ack.Written, r.Ack.Bytes, r.Ack.Parts
		b.report.Rejected, b.report.RejectedKeys, b.report.RejectedReason = len(r.Ack.Rejected), r.Ack.RejectedKeys(maxRejectedKeys), ""
		if len(r.Ack.Rejected) > 0 {
			b.report.RejectedReason = r.Ack.Rejected[0].Reason
		}
	}
	a.sendReport()
}

func (a *actorState) sendReport() { a.report(nil) }

// report sends the inventory's report, announcing snap when it is not nil.
func (a *actorState) report(snap *rows.Snapshot) {
	if a.reporter == nil || a.cfg == nil {
		return
	}
	rep := Report{Kind: a.cfg.Kind, ID: a.cfg.ID, ItemCount: a.rows.len(), Waiting: a.waiting(), Snapshot: snap}
	rep.Holding = a.holding && len(rep.Waiting) > 0
	rep.Settling = len(rep.Waiting) > 0 && a.settling()
	a.metrics.InventoryItems(a.cfg.ID.Namespace+"/"+a.cfg.ID.Name, rep.ItemCount)
	if a.cfg.Shards {
		rep.Shards = a.rows.shards()
		for i := range rep.Shards {
			rep.Shards[i].Checksum = a.shardSums[rep.Shards[i].Namespace]
		}
	}
	for _, bc := range a.cfg.Bindings {
		if b := a.bindings[bc.Key]; b != nil {
			rep.Bindings = append(rep.Bindings, b.report)
		}
	}
	a.reporter.InventoryReport(rep)
}
