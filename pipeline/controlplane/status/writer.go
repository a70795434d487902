package status

import (
	"context"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/events"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/actors/target"
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
}

// Degraded reports whether the verdict is a failure.
func (v Verdict) Degraded() bool { return v.Reason != "" }

// Writer batches status writes.
type Writer struct {
	c        client.Client
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	targets map[Key]*targetState
	invs    map[Key]*inventoryState
	dirty   map[Key]bool
	wake    chan struct{}

	degraded       *prometheus.GaugeVec
	degradedReason map[Key]string // the reason each Degraded series carries

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

// NewWriter builds a writer that flushes at most every interval.
func NewWriter(c client.Client, interval time.Duration) *Writer {
	return &Writer{c: c, interval: interval, now: time.Now,
		targets: map[Key]*targetState{}, invs: map[Key]*inventoryState{},
		dirty: map[Key]bool{}, wake: make(chan struct{}, 1), degraded: newDegradedGauge(), degradedReason: map[Key]string{}}
}

func (w *Writer) mark(key Key) {
	w.dirty[key] = true
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Set records a reconciler's verdict.
func (w *Writer) Set(key Key, v Verdict) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if key.isTarget() {
		w.target(key).verdict = &v
	} else {
		w.inventory(key).verdict = &v
	}
	w.mark(key)
}

// Forget drops an object that is gone.
func (w *Writer) Forget(key Key) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.targets, key)
	delete(w.invs, key)
	delete(w.dirty, key)
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
	w.mu.Lock()
	defer w.mu.Unlock()
	w.target(key).report = &r
	w.mark(key)
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
	w.mark(key)
}

// ClusterNamespace is the inventory namespace of cluster inventories in
// exports (SEMANTICS §9: inventory/cluster/<name>).
const ClusterNamespace = "cluster"

// Start flushes until ctx ends. It implements manager.Runnable.
func (w *Writer) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
		}
		w.flush(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(w.interval):
		}
	}
}

// NeedLeaderElection: only the leader collects, so only it writes status.
func (w *Writer) NeedLeaderElection() bool { return true }

func (w *Writer) flush(ctx context.Context) {
	w.mu.Lock()
	dirty := w.dirty
	w.dirty = map[Key]bool{}
	w.mu.Unlock()
	for key := range dirty {
		var err error
		if key.isTarget() {
			err = w.writeTarget(ctx, key)
		} else {
			err = w.writeInventory(ctx, key)
		}
		if client.IgnoreNotFound(err) != nil {
			log.FromContext(ctx).Info("status write failed; will retry", "kind", key.Kind, "object", key.NamespacedName, "error", err.Error())
			w.mu.Lock()
			w.mark(key)
			w.mu.Unlock()
		}
	}
}
