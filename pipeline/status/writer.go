package status

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/actors/target"
	"kollect.dev/kollect/model/compile"
)

// Verdict is a reconciler's conclusion about an object.
type Verdict struct {
	Generation int64
	// Reason and Message are set when the object is Degraded.
	Reason, Message string
	// Detail opens the Ready message, for example `profileRef "p" resolved`.
	Detail string
	// Namespaces matched and effective (targets only).
	Matched, Effective []string
	Rules              int
	// Targets is the number of targets selected (cluster inventories).
	Targets int
	// Profile and GVK (group/version/kind) label a target's row count in
	// kollect_collected_objects.
	Profile, GVK string
	// Forbidden, when set, says which namespaces the target reads that the
	// operator may not list (targets only): it collects the others.
	Forbidden string
}

// Degraded reports whether the verdict is a failure.
func (v Verdict) Degraded() bool { return v.Reason != "" }

// Writer keeps, per object, the latest verdict of its reconciler and the
// latest report of the engine, and writes their merge. It has no loop of
// its own: a reconciler calls Write once per reconcile, and an engine
// report enqueues its object through the kind's Source for a status
// controller that calls Refresh, so controller-runtime's workqueue gives
// dedupe, back-off and concurrency, and a report costs one status patch,
// never a reconcile.
type Writer struct {
	c        client.Client
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	targets map[Key]*targetState
	invs    map[Key]*inventoryState
	queues  map[Kind]workqueue.TypedRateLimitingInterface[reconcile.Request]

	degraded       *prometheus.GaugeVec
	degradedReason map[Key]string // the reason each Degraded series carries
	collected      *prometheus.GaugeVec
	collectedBy    map[Key]collectedSeries
	collectedSum   map[[2]string]collectedTotal
	series         *profileSeries
	shardWarns     prometheus.Counter

	// Events, when set, records Warning events on inventories whose sinks
	// set rows aside.
	Events events.EventRecorder
}

// Kind is one of the reconciled kinds whose status the writer owns.
type Kind string

// The kinds.
const (
	Target           Kind = "KollectTarget"
	ClusterTarget    Kind = "KollectClusterTarget"
	Inventory        Kind = "KollectInventory"
	ClusterInventory Kind = "KollectClusterInventory"
)

// Key names an object of a kind.
type Key struct {
	Kind Kind
	types.NamespacedName
}

func (k Key) isTarget() bool { return k.Kind == Target || k.Kind == ClusterTarget }

type targetState struct {
	verdict    *Verdict
	report     *target.Report
	lastCount  int64
	hasCount   bool
	countSince time.Time
}

type inventoryState struct {
	verdict *Verdict
	report  *inventory.Report
}

// NewWriter builds a writer. An engine report refreshes its object's
// status at most once per interval, so a busy cluster does not turn into
// a status-write storm.
func NewWriter(c client.Client, interval time.Duration, clk clock.PassiveClock) *Writer {
	return &Writer{c: c, interval: interval, now: clk.Now,
		targets: map[Key]*targetState{}, invs: map[Key]*inventoryState{},
		queues: map[Kind]workqueue.TypedRateLimitingInterface[reconcile.Request]{}, degraded: newDegradedGauge(), degradedReason: map[Key]string{},
		collected: newCollectedGauge(), collectedBy: map[Key]collectedSeries{}, collectedSum: map[[2]string]collectedTotal{},
		series: newProfileSeries(), shardWarns: prometheus.NewCounter(prometheus.CounterOpts{Name: "kollect_export_shard_warn_total",
			Help: "Inventory reconciles that found 1800 rows or more (ExportShardWarning)."})}
}

// Source is the event source of a kind's status controller
// (controllers.StatusController): each engine report about an object of
// that kind enqueues it, no sooner than the interval.
// Reports that arrived before the controller started are enqueued when it
// starts.
func (w *Writer) Source(kind Kind) source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.queues[kind] = q
		for key, st := range w.targets {
			if key.Kind == kind && st.report != nil {
				q.Add(reconcile.Request{NamespacedName: key.NamespacedName})
			}
		}
		for key, st := range w.invs {
			if key.Kind == kind && st.report != nil {
				q.Add(reconcile.Request{NamespacedName: key.NamespacedName})
			}
		}
		return nil
	})
}

// reported asks the kind's controller to reconcile key. Callers hold mu.
func (w *Writer) reported(key Key) {
	if q := w.queues[key.Kind]; q != nil {
		q.AddAfter(reconcile.Request{NamespacedName: key.NamespacedName}, w.interval)
	}
}

// Write records a reconciler's verdict and patches the object's status
// with it and the latest report, when that changes anything. An object
// that is gone is not an error.
func (w *Writer) Write(ctx context.Context, key Key, v Verdict) error {
	w.mu.Lock()
	if key.isTarget() {
		w.target(key).verdict = &v
	} else {
		st := w.inventory(key)
		st.verdict = &v
		if st.report != nil && st.report.ItemCount >= ShardWarningRows {
			w.shardWarns.Inc()
		}
	}
	w.mu.Unlock()
	return w.Refresh(ctx, key)
}

// Refresh patches the object's status with the reconciler's last verdict
// and the engine's latest report, without a new verdict: what an engine
// report needs (an export acknowledged, a count), which must not cost a
// reconcile (reading sinks, Secrets, scopes, compiling profiles). An
// object without a verdict yet waits for its reconcile.
func (w *Writer) Refresh(ctx context.Context, key Key) error {
	var err error
	if key.isTarget() {
		err = w.writeTarget(ctx, key)
	} else {
		err = w.writeInventory(ctx, key)
	}
	return client.IgnoreNotFound(err)
}

// Forget drops an object that is gone.
func (w *Writer) Forget(key Key) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.targets, key)
	delete(w.invs, key)
	w.forgetMetrics(key)
}

func (w *Writer) target(key Key) *targetState {
	st := w.targets[key]
	if st == nil {
		st = &targetState{}
		w.targets[key] = st
	}
	return st
}

func (w *Writer) inventory(key Key) *inventoryState {
	st := w.invs[key]
	if st == nil {
		st = &inventoryState{}
		w.invs[key] = st
	}
	return st
}

// TargetReport implements target.Reporter.
func (w *Writer) TargetReport(r target.Report) {
	key := Key{Kind: Kind(r.Ref.Kind), NamespacedName: types.NamespacedName{Namespace: r.Ref.Namespace, Name: r.Ref.Name}}
	if r.Series != nil {
		w.series.record(key, r)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.target(key).report = &r
	w.reported(key)
}

// InventoryReport implements inventory.Reporter. Cluster inventories
// export as namespace "cluster"; their objects have none.
func (w *Writer) InventoryReport(r inventory.Report) {
	key := Key{Kind: Inventory, NamespacedName: types.NamespacedName{Namespace: r.ID.Namespace, Name: r.ID.Name}}
	if Kind(r.Kind) == ClusterInventory {
		key = Key{Kind: ClusterInventory, NamespacedName: types.NamespacedName{Name: r.ID.Name}}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inventory(key).report = &r
	w.reported(key)
}

// ClusterNamespace is the inventory namespace of cluster inventories in
// exports: their rows are filed under inventory/cluster/<name>, as
// upstream files them.
const ClusterNamespace = compile.ClusterInventoryNamespace
