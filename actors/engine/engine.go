package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kollect.dev/kollect/actors"
	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/actors/target"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/collect"
	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/model/selection"
)

// Reporter receives target and inventory reports.
type Reporter interface {
	target.Reporter
	inventory.Reporter
}

// TargetReport and InventoryReport are what a Reporter receives, named
// through the facade for those outside the actors.
type (
	TargetReport    = target.Report
	InventoryReport = inventory.Report
)

// Engine runs the actor graph.
type Engine struct {
	system   *actor.ActorSystem
	inf      *informers.Manager
	metrics  *actors.Metrics
	reporter Reporter
	batch    time.Duration
	log      *slog.Logger
	// SeriesEvery spaces the profile series a target computes after row
	// changes (--collect-metrics-sample-interval); set before targets
	// start. 0 computes them on every change.
	SeriesEvery time.Duration
	// Publish makes every inventory announce each complete state it
	// builds in its reports (inventory.Report.Snapshot), bound to sinks or
	// not: the read API serves them. Set before inventories start.
	Publish bool

	// Targets and inventories are children of a guardian each, which
	// supervises them (see guardian.go).
	targetGuardian, inventoryGuardian *actor.PID

	mu sync.Mutex
	// stopped is set by Stop: from then on nothing starts (a reconcile
	// that runs during the manager's shutdown must neither spawn actors
	// that no one stops nor wait on a shut-down actor system).
	stopped bool
	links   // the running targets and inventories
	// resting holds inventories stopped by their supervisor and waiting to
	// start again; removing one cancels its restart.
	resting map[string]bool
	clock   actors.Clock
}

type targetEntry struct {
	pid   *actor.PID
	inbox *target.Inbox
	gvrs  []schema.GroupVersionResource
}

type inventoryEntry struct {
	pid    *actor.PID
	spec   InventorySpec
	memory *inventory.Memory
}

// InventorySpec is what UpsertInventory needs.
type InventorySpec struct {
	// Key identifies the inventory in the engine, for example
	// "KollectInventory:team-a/main".
	Key      string
	Kind     string
	ID       rows.Identity
	Bindings []sink.Config
	// Cluster marks a KollectClusterInventory: it reads the cluster targets
	// in Targets, limited to TargetNamespaces. A namespaced inventory reads
	// every row whose target namespace is its own (namespaced targets there
	// and cluster targets' rows of that namespace).
	Cluster          bool
	Targets          []messages.TargetRef
	TargetNamespaces map[string]bool
	DedupeByUID      bool
	// Expect names the targets that exist and should run (not suspended,
	// not being deleted). Until each of them runs and has listed its
	// objects the inventory exports nothing: after a restart, the engine
	// learns of targets one reconcile at a time.
	Expect []messages.TargetRef
}

// ErrStopped is what starting a target or an inventory returns once the
// engine has stopped (the manager is shutting down).
var ErrStopped = errors.New("the collection engine has stopped")

// New builds an engine. batch is the inventories' coalescing window; log
// receives the actor system's own logs (supervision, dead letters), nil
// discards them; clk is the time every actor reads and sets its timers
// by (nil: the real clock).
func New(inf *informers.Manager, metrics *actors.Metrics, reporter Reporter, batch time.Duration, log *slog.Logger, clk actors.Clock) *Engine {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	system := actor.NewActorSystemWithConfig(actor.Configure(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return log.With("lib", "protoactor")
	})))
	e := &Engine{system: system, inf: inf, metrics: metrics, reporter: reporter, batch: batch, log: log, clock: actors.OrReal(clk),
		links: newLinks(), resting: map[string]bool{}}
	e.targetGuardian = spawnGuardian(e.system.Root, targetSupervision(), e.targetStopped)
	e.inventoryGuardian = spawnGuardian(e.system.Root, inventorySupervision(), e.inventoryStopped)
	return e
}

// targetStopped forgets a target actor that stopped on its own: the next
// reconcile starts a new one. Its inventories got TargetGone.
func (e *Engine) targetStopped(pid *actor.PID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ref, t := range e.targets {
		if t.pid.Equal(pid) {
			e.dropTarget(ref)
			t.inbox.Discard()
		}
	}
}

// inventoryRestartAfter is how long a stopped inventory rests before the
// engine starts it again from its last spec.
const inventoryRestartAfter = time.Minute

// inventoryStopped forgets an inventory actor that stopped on its own
// (repeated failures), reports it, so status does not call it Ready, and
// starts it again from its spec after a rest, unless it was removed or
// replaced meanwhile.
func (e *Engine) inventoryStopped(pid *actor.PID) {
	e.mu.Lock()
	var stopped *inventoryEntry
	for key, ent := range e.inventories {
		if ent.pid.Equal(pid) {
			stopped = ent
			e.dropInventory(key)
			e.resting[key] = true
		}
	}
	e.mu.Unlock()
	if stopped == nil {
		return
	}
	if e.reporter != nil {
		e.reporter.InventoryReport(inventory.Report{Kind: stopped.spec.Kind, ID: stopped.spec.ID,
			Stopped: fmt.Sprintf("the inventory's actor stopped after more than %d failures in a minute; it starts again in %s", inventoryRestarts, inventoryRestartAfter)})
	}
	spec := stopped.spec
	e.clock.AfterFunc(inventoryRestartAfter, func() {
		e.mu.Lock()
		due := e.resting[spec.Key]
		delete(e.resting, spec.Key)
		e.mu.Unlock()
		if due && !e.system.IsStopped() {
			_ = e.UpsertInventory(spec)
		}
	})
}

// TargetSpec is what UpsertTarget needs: the compiled selection and
// extraction, and the namespace scope the informers may narrow to.
type TargetSpec struct {
	Ref        messages.TargetRef
	Generation int64
	ProfileGVK schema.GroupVersionKind
	Selection  *selection.Set
	Extractor  *extract.Extractor
	// Namespaces are the namespaces the target can match, when the spec
	// names them (nil: any).
	Namespaces []string
	// PerNamespace gives each row the object's namespace as its target
	// namespace (cluster targets).
	PerNamespace bool
	// Profile names the target's profile (its profileRef) and Metrics are
	// the profile's series (spec.metrics), for the profile-driven
	// Prometheus series.
	Profile string
	Metrics []Metric
}

// Metric is one series a target's profile declares (KollectProfile
// spec.metrics). Reconcilers name it through the facade, as everything
// else they hand the engine.
type Metric = target.Metric

// gvkLabel writes a kind as the profile series label it:
// group/version/kind, or version/kind for the core group.
func gvkLabel(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Version + "/" + gvk.Kind
	}
	return gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
}

// PartialAccessError is what UpsertTarget returns when the target runs
// but the operator may not list some of its namespaces: their objects are
// not collected (status: ScopeForbidden) while the others are.
type PartialAccessError struct {
	// Forbidden names each kind's namespaces: "deployments in team-c".
	Forbidden []string
}

func (e *PartialAccessError) Error() string {
	return "the operator may not list " + strings.Join(e.Forbidden, "; ") + ": grant it list and watch there (a Role); collecting elsewhere"
}

// UpsertTarget starts or reconfigures a target. It fails, leaving other
// targets untouched, when a kind it reads is not served or cannot be listed
// (an *informers.ForbiddenError when the operator may list it in none of
// the target's namespaces); a *PartialAccessError says the target runs
// without the namespaces it may not list.
func (e *Engine) UpsertTarget(ctx context.Context, spec TargetSpec) error {
	e.mu.Lock()
	stopped := e.stopped
	e.mu.Unlock()
	if stopped {
		return ErrStopped
	}
	if err := e.inf.StartNamespaces(ctx); err != nil {
		return err
	}
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return ErrStopped
	}
	ent := e.targets[spec.Ref]
	started := ent == nil
	if started {
		inbox := target.NewInbox(e.system.Root, e.metrics)
		name := spec.Ref.Namespace + "/" + spec.Ref.Name
		pid, err := e.spawnUnder(e.targetGuardian, target.Props(inbox, e.inf, e.reporter, e.metrics, name, e.clock))
		if err != nil {
			e.mu.Unlock()
			return err
		}
		ent = &targetEntry{pid: pid, inbox: inbox}
		e.addTarget(spec.Ref, ent)
		e.inf.WatchNamespaces(spec.Ref.String(), inbox)
	}
	e.mu.Unlock()

	eval := &collect.Evaluator{TargetNamespace: spec.Ref.Namespace, TargetName: spec.Ref.Name, PerNamespace: spec.PerNamespace,
		ProfileGVK: spec.ProfileGVK, Selection: spec.Selection, Extractor: spec.Extractor}
	reads := eval.Reads()
	var sources []target.Source
	var gvrs []schema.GroupVersionResource
	var forbidden []string
	for _, gvk := range spec.Selection.GVKs(spec.ProfileGVK) {
		gvr, store, denied, err := e.inf.Acquire(ctx, gvk, spec.Ref.String(), spec.Namespaces, reads, ent.inbox)
		if len(denied) > 0 {
			forbidden = append(forbidden, gvr.Resource+" in "+strings.Join(denied, ", "))
		}
		if err != nil {
			for _, g := range gvrs {
				e.inf.Release(g, spec.Ref.String())
			}
			return fmt.Errorf("watch %s: %w", gvk.Kind, err)
		}
		sources = append(sources, target.Source{GVR: gvr, GVK: gvk, Store: store})
		gvrs = append(gvrs, gvr)
	}
	e.mu.Lock()
	stale := ent.gvrs
	ent.gvrs = gvrs
	e.mu.Unlock()
	for _, g := range stale {
		if !contains(gvrs, g) {
			e.inf.Release(g, spec.Ref.String())
		}
	}
	e.system.Root.Send(ent.pid, &target.Configure{Config: &target.Config{
		Ref: spec.Ref, Sources: sources, Generation: spec.Generation, Evaluator: eval,
		Profile: spec.Profile, GVK: gvkLabel(spec.ProfileGVK), Metrics: spec.Metrics, SampleEvery: e.SeriesEvery,
	}})
	if started {
		e.relink(spec.Ref) // a reconfigured target keeps its actor: its inventories keep their links
	}
	if len(forbidden) > 0 {
		return &PartialAccessError{Forbidden: forbidden}
	}
	return nil
}

// FreezeTarget keeps a degraded target's rows as they are: it stops
// collecting and releases its informers, and its inventories go on
// exporting the rows it last collected. A target that never listed stays
// unlisted, so its inventories wait rather than export without it. The next
// UpsertTarget resumes it.
func (e *Engine) FreezeTarget(ref messages.TargetRef) {
	e.mu.Lock()
	ent := e.targets[ref]
	var gvrs []schema.GroupVersionResource
	if ent != nil {
		gvrs, ent.gvrs = ent.gvrs, nil
	}
	refused := ent == nil && !e.refused[ref]
	if refused {
		e.refused[ref] = true
	}
	e.mu.Unlock()
	if refused {
		e.relink(ref) // its inventories stop settling for it
	}
	if ent == nil {
		return
	}
	e.system.Root.Send(ent.pid, &target.Freeze{})
	for _, g := range gvrs {
		e.inf.Release(g, ref.String())
	}
}

// RemoveTarget stops a target; inventories drop its rows.
func (e *Engine) RemoveTarget(ref messages.TargetRef) {
	e.mu.Lock()
	ent := e.targets[ref]
	e.dropTarget(ref)
	stopped := e.stopped
	e.mu.Unlock()
	if ent == nil || stopped {
		return
	}
	e.inf.UnwatchNamespaces(ref.String())
	for _, g := range ent.gvrs {
		e.inf.Release(g, ref.String())
	}
	_ = e.system.Root.StopFuture(ent.pid).Wait()
	ent.inbox.Discard()
	e.relink(ref)
}

// UpsertInventory starts or reconfigures an inventory and its bindings.
func (e *Engine) UpsertInventory(spec InventorySpec) error {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return ErrStopped
	}
	delete(e.resting, spec.Key)
	ent := e.inventories[spec.Key]
	if ent == nil {
		mem := &inventory.Memory{}
		pid, err := e.spawnUnder(e.inventoryGuardian, inventory.Props(e.reporter, e.metrics, spec.ID.Namespace+"/"+spec.ID.Name, mem, e.clock))
		if err != nil {
			e.mu.Unlock()
			return err
		}
		ent = &inventoryEntry{pid: pid, memory: mem, spec: spec}
		e.addInventory(spec.Key, ent)
	}
	ent.spec = spec
	cfg := e.config(ent, e.batch, e.Publish)
	e.mu.Unlock()
	e.system.Root.Send(ent.pid, &inventory.Configure{Config: cfg})
	return nil
}

// ClusterTargetKind is the TargetRef kind of cluster targets.
const ClusterTargetKind = "KollectClusterTarget"

// RemoveInventory stops an inventory and its sink actors; the exports they
// cancel may still be returning (DrainInventory waits for them).
func (e *Engine) RemoveInventory(key string) { e.removeInventory(context.Background(), key, false) }

// DrainInventory is RemoveInventory that returns once the exports it
// cancelled have returned (or ctx ends, or removeWait passes), so that a
// cleanup that follows runs after their last write, not beside it.
func (e *Engine) DrainInventory(ctx context.Context, key string) {
	e.removeInventory(ctx, key, true)
}

func (e *Engine) removeInventory(ctx context.Context, key string, drain bool) {
	e.mu.Lock()
	ent := e.inventories[key]
	e.dropInventory(key)
	delete(e.resting, key)
	stopped := e.stopped
	e.mu.Unlock()
	if ent == nil || stopped {
		return
	}
	_ = e.system.Root.StopFuture(ent.pid).Wait()
	if !drain {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, removeWait)
	defer cancel()
	if err := ent.memory.Quiesce(ctx); err != nil {
		e.log.Warn("an export of a removed inventory is still running", "inventory", key, "error", err)
	}
}

// removeWait bounds how long removing an inventory waits for its cancelled
// exports to return.
const removeWait = time.Minute

// relink sends the inventories that read ref (which started or stopped)
// their current target list.
func (e *Engine) relink(ref messages.TargetRef) {
	e.mu.Lock()
	var sends []func()
	for _, ent := range e.readers(ref) {
		cfg, pid := e.config(ent, e.batch, e.Publish), ent.pid
		sends = append(sends, func() { e.system.Root.Send(pid, &inventory.Configure{Config: cfg}) })
	}
	e.mu.Unlock()
	for _, s := range sends {
		s()
	}
}

// Stop stops the engine: inventories first, so that nothing is exported
// while targets and informers wind down (a stopping target is not a deleted
// one), then the targets and the informers. In-flight exports are
// cancelled; what they did not finish is exported again by the next leader.
func (e *Engine) Stop() {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return
	}
	e.stopped = true
	invs := make([]*actor.PID, 0, len(e.inventories))
	for _, ent := range e.inventories {
		invs = append(invs, ent.pid)
	}
	e.dropInventories()
	e.mu.Unlock()
	// All at once: an inventory stops once its sink actors have (exports
	// in flight are canceled, not awaited), so a shutdown takes as long as
	// the slowest, not the sum.
	start := e.clock.Now()
	var wg sync.WaitGroup
	for _, pid := range invs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.system.Root.StopFuture(pid).Wait(); err != nil {
				e.log.Warn("an inventory actor did not stop in time", "actor", pid.Id, "waited", e.clock.Since(start).Round(time.Millisecond), "error", err)
			}
		}()
	}
	wg.Wait()
	e.system.Shutdown()
	e.inf.Stop()
	if took := e.clock.Since(start); took > time.Second {
		e.log.Info("engine stopped", "inventories", len(invs), "took", took.Round(time.Millisecond))
	}
}

func contains(gvrs []schema.GroupVersionResource, g schema.GroupVersionResource) bool {
	for _, x := range gvrs {
		if x == g {
			return true
		}
	}
	return false
}
