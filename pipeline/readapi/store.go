package readapi

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"kollect.dev/kollect/actors/engine"
	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/actors/target"
	"kollect.dev/kollect/model/rows"
)

// Ref names one inventory in one cluster.
type Ref struct {
	Cluster, Namespace, Name string
}

// State is what the store holds of one inventory: its last complete
// snapshot and the last outcome of each of its bindings.
type State struct {
	Ref      Ref
	Snapshot *rows.Snapshot
	Bindings []inventory.BindingReport
	// Updated is when the snapshot changed last.
	Updated time.Time
}

// Store keeps the last complete state each inventory announced
// (inventory.Report.Snapshot) and tells watchers of every change. It sits
// between the engine and the status writer: it reads every report and
// hands it on unchanged. States are immutable once stored: readers share
// them without copying.
type Store struct {
	next    engine.Reporter
	cluster string
	leading atomic.Bool

	mu       sync.RWMutex
	states   map[Ref]*State
	watchers map[*Watcher]struct{}
}

// Watcher collects the inventories whose state changed since it last
// took them; Changed fires when there are some. A slow reader loses
// nothing: changes to one inventory fold into one notice.
type Watcher struct {
	mu      sync.Mutex
	pending map[Ref]bool
	changed chan struct{}
}

// Changed receives when the watcher holds changes.
func (w *Watcher) Changed() <-chan struct{} { return w.changed }

// Take returns the inventories changed since the last Take, in order.
func (w *Watcher) Take() []Ref {
	w.mu.Lock()
	out := make([]Ref, 0, len(w.pending))
	for ref := range w.pending {
		out = append(out, ref)
	}
	clear(w.pending)
	w.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

func (w *Watcher) notify(ref Ref) {
	w.mu.Lock()
	w.pending[ref] = true
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// NewStore returns a store that hands every report on to next and files
// inventories under cluster.
func NewStore(next engine.Reporter, cluster string) *Store {
	return &Store{next: next, cluster: cluster, states: map[Ref]*State{}, watchers: map[*Watcher]struct{}{}}
}

var _ engine.Reporter = (*Store)(nil)

// TargetReport hands r on.
func (s *Store) TargetReport(r target.Report) { s.next.TargetReport(r) }

// InventoryReport files the state r announces and hands r on. It never
// blocks.
func (s *Store) InventoryReport(r inventory.Report) {
	s.next.InventoryReport(r)
	if r.Kind != "KollectInventory" {
		return // cluster inventories are not served yet
	}
	ref := Ref{Cluster: s.cluster, Namespace: r.ID.Namespace, Name: r.ID.Name}
	s.mu.Lock()
	old := s.states[ref]
	st := &State{Ref: ref, Bindings: r.Bindings}
	if old != nil {
		st.Snapshot, st.Updated = old.Snapshot, old.Updated
	}
	changed := r.Snapshot != nil && (old == nil || old.Snapshot == nil || old.Snapshot.Checksum != r.Snapshot.Checksum)
	if r.Snapshot != nil {
		st.Snapshot = r.Snapshot
		if changed {
			st.Updated = r.Snapshot.ExportedAt
		}
	}
	s.states[ref] = st
	if changed {
		for w := range s.watchers {
			w.notify(ref)
		}
	}
	s.mu.Unlock()
}

// Lead marks this replica as the one whose engine runs (the leader): only
// it holds rows.
func (s *Store) Lead() { s.leading.Store(true) }

// Leading says whether this replica's engine runs.
func (s *Store) Leading() bool { return s.leading.Load() }

// Get returns the state of one inventory, or nil.
func (s *Store) Get(ref Ref) *State {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.states[ref]
}

// List returns every state, ordered by cluster, namespace and name.
func (s *Store) List() []*State {
	s.mu.RLock()
	out := make([]*State, 0, len(s.states))
	for _, st := range s.states {
		out = append(out, st)
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return less(out[i].Ref, out[j].Ref) })
	return out
}

// Forget drops the states for which gone says true (inventories deleted).
func (s *Store) Forget(gone func(Ref) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ref := range s.states {
		if gone(ref) {
			delete(s.states, ref)
		}
	}
}

// Watch returns a watcher of every inventory's changes from now on, and a
// func that ends it.
func (s *Store) Watch() (*Watcher, func()) {
	w := &Watcher{pending: map[Ref]bool{}, changed: make(chan struct{}, 1)}
	s.mu.Lock()
	s.watchers[w] = struct{}{}
	s.mu.Unlock()
	return w, func() {
		s.mu.Lock()
		delete(s.watchers, w)
		s.mu.Unlock()
	}
}

func less(a, b Ref) bool {
	if a.Cluster != b.Cluster {
		return a.Cluster < b.Cluster
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
