package status

import (
	"context"
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
	// Detail is extra context for the Ready message (the profile name).
	Detail string
	// Namespaces matched and effective (targets only).
	Matched, Effective []string
	Rules              int
}

// Degraded reports whether the verdict is a failure.
func (v Verdict) Degraded() bool { return v.Reason != "" }

// Writer batches status writes.
type Writer struct {
	c        client.Client
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	targets map[types.NamespacedName]*targetState
	invs    map[types.NamespacedName]*inventoryState
	dirty   map[types.NamespacedName]kind
	wake    chan struct{}
}

type kind int

const (
	targetKind kind = iota + 1
	inventoryKind
)

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
		targets: map[types.NamespacedName]*targetState{}, invs: map[types.NamespacedName]*inventoryState{},
		dirty: map[types.NamespacedName]kind{}, wake: make(chan struct{}, 1)}
}

func (w *Writer) mark(key types.NamespacedName, k kind) {
	w.dirty[key] = k
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// SetTarget records a target reconciler's verdict.
func (w *Writer) SetTarget(key types.NamespacedName, v Verdict) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.targets[key]
	if st == nil {
		st = &targetState{}
		w.targets[key] = st
	}
	st.verdict = &v
	w.mark(key, targetKind)
}

// SetInventory records an inventory reconciler's verdict.
func (w *Writer) SetInventory(key types.NamespacedName, v Verdict) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.invs[key]
	if st == nil {
		st = &inventoryState{}
		w.invs[key] = st
	}
	st.verdict = &v
	w.mark(key, inventoryKind)
}

// Forget drops an object that is gone.
func (w *Writer) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.targets, key)
	delete(w.invs, key)
	delete(w.dirty, key)
}

// TargetReport implements target.Reporter.
func (w *Writer) TargetReport(r target.Report) {
	key := types.NamespacedName{Namespace: r.Ref.Namespace, Name: r.Ref.Name}
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.targets[key]
	if st == nil {
		st = &targetState{}
		w.targets[key] = st
	}
	st.report = &r
	w.mark(key, targetKind)
}

// InventoryReport implements inventory.Reporter.
func (w *Writer) InventoryReport(r inventory.Report) {
	key := types.NamespacedName{Namespace: r.ID.Namespace, Name: r.ID.Name}
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.invs[key]
	if st == nil {
		st = &inventoryState{}
		w.invs[key] = st
	}
	st.report = &r
	w.mark(key, inventoryKind)
}

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
	w.dirty = map[types.NamespacedName]kind{}
	w.mu.Unlock()
	for key, k := range dirty {
		var err error
		switch k {
		case targetKind:
			err = w.writeTarget(ctx, key)
		case inventoryKind:
			err = w.writeInventory(ctx, key)
		}
		if client.IgnoreNotFound(err) != nil {
			log.FromContext(ctx).Info("status write failed; will retry", "object", key, "error", err.Error())
			w.mu.Lock()
			if _, again := w.dirty[key]; !again {
				w.mark(key, k)
			}
			w.mu.Unlock()
		}
	}
}
