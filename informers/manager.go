package informers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"kollect.dev/kollect/pipeline/model/projection"
)

// Store reads the cached objects of one GVR.
type Store interface {
	// List decodes the cached objects of the namespaces named, or of all
	// when none is. Unreadable names (by key) the cached objects that could
	// not be decoded, each also reported as an error: they exist, so a
	// caller must not take them for gone.
	List(namespaces ...string) (objs []*unstructured.Unstructured, unreadable []string)
	// Namespaces names the namespaces that hold cached objects; ok is
	// false when the store cannot tell (its objects are cluster-scoped,
	// or it keeps no index), and only List() then reads everything.
	Namespaces() (names []string, ok bool)
}

// Manager runs the shared informers.
type Manager struct {
	*Resolver
	dyn      dynamic.Interface
	resync   time.Duration
	syncWait time.Duration
	metrics  *Metrics

	mu         sync.Mutex
	informers  map[schema.GroupVersionResource]*entry
	namespaces *generation
	nsSubs     map[string]NamespaceSubscriber
	// only, when set, is the namespace cache's fixed list (tenant mode):
	// read one by one every pollEvery, into nsPolled.
	only      []string
	pollEvery time.Duration
	nsPolled  cache.Store
}

type entry struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	subs       map[string]sub
	view       atomic.Pointer[[]sub] // copy of subs read by event handlers without the lock
	count      atomic.Int64

	// current is the generation whose store subscribers read; newest is
	// the one events come from: the same, or its replacement while that
	// lists. A rebuilt informer hands over in one step: the new generation
	// dispatches events at once (the old one stops), the old store stays
	// readable and running until the new one has synced, then the store
	// swaps and every subscriber is asked to list again, so no target reads
	// a stopped cache and deletes made during the swap are not lost. Both
	// change only under the manager's lock; handlers read newest without it.
	current, newest atomic.Pointer[generation]
}

// generation is one run of an informer for one namespace scope and one
// projection.
type generation struct {
	informer  cache.SharedIndexInformer
	namespace string // "" when cluster-wide
	kept      *projection.Set
	cancel    context.CancelFunc
	swapped   chan struct{} // closed once it is the entry's current generation
	abandoned chan struct{} // closed when it is replaced before it became current
}

// pending is the generation that is listing to replace the current one,
// or nil.
func (e *entry) pending() *generation {
	if g := e.newest.Load(); g != e.current.Load() {
		return g
	}
	return nil
}

// reads is the union of what the subscribers read.
func (e *entry) reads() *projection.Set {
	s := &projection.Set{}
	for _, sub := range e.subs {
		s.Merge(sub.reads)
	}
	return s
}

// publish refreshes the lock-free view of the subscribers; call with m.mu.
func (e *entry) publish() {
	v := make([]sub, 0, len(e.subs))
	for _, s := range e.subs {
		v = append(v, s)
	}
	e.view.Store(&v)
}

type sub struct {
	s         Subscriber
	namespace string
	reads     *projection.Set
}

// New builds a manager. resync is the informer resync period; syncWait
// bounds the wait for an informer's first list, so a kind that cannot be
// listed degrades its targets instead of hanging.
func New(dyn dynamic.Interface, disco discovery.DiscoveryInterface, resync, syncWait time.Duration, metrics *Metrics) *Manager {
	return &Manager{
		Resolver:  NewResolver(disco),
		dyn:       dyn,
		resync:    resync,
		syncWait:  syncWait,
		metrics:   metrics,
		informers: map[schema.GroupVersionResource]*entry{},
		nsSubs:    map[string]NamespaceSubscriber{},
	}
}

// Acquire subscribes id to the objects of gvk. namespace narrows what the
// subscriber needs ("" for all namespaces); the informer is scoped to one
// namespace while every subscriber names the same one. reads is the part of
// each object the subscriber reads (nil: all of it); the cache keeps the
// union of what its subscribers read, and lists again when a new subscriber
// reads more. It returns once the informer has listed, or with an error
// that says why it could not.
func (m *Manager) Acquire(ctx context.Context, gvk schema.GroupVersionKind, id, namespace string, reads *projection.Set, s Subscriber) (schema.GroupVersionResource, Store, error) {
	gvr, namespaced, err := m.Resolve(gvk)
	if err != nil {
		return gvr, nil, err
	}
	if !namespaced {
		namespace = ""
	}
	m.mu.Lock()
	e := m.informers[gvr]
	if e == nil {
		e = &entry{gvr: gvr, subs: map[string]sub{}, namespaced: namespaced}
		m.informers[gvr] = e
	}
	if reads == nil {
		reads = projection.All()
	}
	e.subs[id] = sub{s: s, namespace: namespace, reads: reads}
	e.publish()
	want := e.desiredNamespace()
	if g := e.newest.Load(); g == nil || want != g.namespace || !g.kept.Covers(reads) {
		m.restartLocked(e, want)
	}
	m.mu.Unlock()

	syncCtx, cancel := context.WithTimeout(ctx, m.syncWait)
	defer cancel()
	// Wait until the newest generation has synced and become current; one
	// abandoned for a later rebuild hands the wait on to that one.
	for {
		m.mu.Lock() // a rebuild swaps generations under the lock: never read half of it
		g := e.newest.Load()
		m.mu.Unlock()
		select {
		case <-g.swapped:
			return gvr, entryStore{e}, nil
		case <-g.abandoned:
		case <-syncCtx.Done():
			m.Release(gvr, id)
			return gvr, nil, fmt.Errorf("list %s: informer did not sync within %s (is the operator allowed to list and watch it?)", gvr, m.syncWait)
		}
	}
}

// Release drops id's subscription; the last one stops the informer.
func (m *Manager) Release(gvr schema.GroupVersionResource, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.informers[gvr]
	if e == nil {
		return
	}
	delete(e.subs, id)
	e.publish()
	if len(e.subs) == 0 {
		e.stopLocked()
		delete(m.informers, gvr)
		m.metrics.forget(gvr)
		return
	}
	want, reads := e.desiredNamespace(), e.reads()
	if cur := e.current.Load(); e.pending() != nil && cur.namespace == want && cur.kept.Covers(reads) {
		// The rebuild was for a subscriber that gave up (it could not
		// list): the running generation serves everyone left. Events went
		// to the abandoned one meanwhile, so subscribers list again.
		e.abandonLocked()
		e.resyncSubscribers()
		return
	}
	if want != e.newest.Load().namespace {
		m.restartLocked(e, want)
	}
}

// abandonLocked drops a generation that never became current.
func (e *entry) abandonLocked() {
	if g := e.pending(); g != nil {
		g.cancel()
		close(g.abandoned)
		e.newest.Store(e.current.Load()) // the running generation dispatches again
	}
}

// stopLocked stops every generation.
func (e *entry) stopLocked() {
	e.abandonLocked()
	if cur := e.current.Load(); cur != nil {
		cur.cancel()
	}
}

// resyncSubscribers asks every subscriber to list the store again.
func (e *entry) resyncSubscribers() {
	if subs := e.view.Load(); subs != nil {
		for _, s := range *subs {
			s.s.Notify(Event{GVR: e.gvr, Resync: true})
		}
	}
}

func (e *entry) desiredNamespace() string {
	ns, first := "", true
	for _, s := range e.subs {
		if first {
			ns, first = s.namespace, false
		} else if s.namespace != ns {
			return ""
		}
	}
	return ns
}

// restartLocked builds a new generation of e's informer for namespace,
// keeping what the subscribers read now, and hands over to it once it has
// synced (see entry). A generation still listing is abandoned.
func (m *Manager) restartLocked(e *entry, namespace string) {
	e.abandonLocked()
	ns := namespace
	if ns == "" {
		ns = metav1.NamespaceAll
	}
	// A namespaced resource's cache is indexed by namespace: a namespace
	// whose labels change is re-evaluated from its own objects, not from a
	// scan of the whole cache per target (namespace churn under many
	// tenants). It costs a set entry per object, about 6 MB at 100,000.
	indexers := cache.Indexers{}
	if e.namespaced {
		indexers[cache.NamespaceIndex] = compactNamespace
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(m.dyn, e.gvr, ns, m.resync, indexers, nil).Informer()
	kept, cd := e.reads(), &codec{}
	_ = inf.SetTransform(func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil // a *compact: a periodic resync of what is cached
		}
		project(u, kept)
		return toCompact(u, cd)
	})
	ctx, cancel := context.WithCancel(context.Background())
	g := &generation{informer: inf, namespace: namespace, kept: kept, cancel: cancel,
		swapped: make(chan struct{}), abandoned: make(chan struct{})}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { m.dispatch(e, g, obj, false, 1) },
		UpdateFunc: func(old, obj any) {
			if old == obj {
				// A periodic resync hands the cached object as both.
				m.metrics.resynced(e.gvr)
			}
			m.dispatch(e, g, obj, false, 0)
		},
		DeleteFunc: func(obj any) { m.dispatch(e, g, obj, true, -1) },
	})
	e.count.Store(0)
	m.metrics.scope(e.gvr, namespace == "")
	first := e.current.Load() == nil
	if first {
		e.current.Store(g)
	}
	e.newest.Store(g)
	go inf.Run(ctx.Done())
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return // abandoned or stopped
		}
		if first {
			close(g.swapped)
			return
		}
		m.mu.Lock()
		if e.newest.Load() != g {
			m.mu.Unlock()
			return
		}
		old := e.current.Swap(g)
		close(g.swapped)
		select {
		case <-old.swapped:
		default:
			// The first generation, stopped before it listed: its waiters
			// move on to this one (Acquire waits on the newest).
			close(old.abandoned)
		}
		m.mu.Unlock()
		old.cancel()
		e.resyncSubscribers()
	}()
}

// dispatch hands one event of generation g to the subscribers. Only the
// newest generation dispatches: its objects carry what every subscriber
// reads.
func (m *Manager) dispatch(e *entry, g *generation, obj any, deleted bool, delta int64) {
	if e.newest.Load() != g {
		return
	}
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = t.Obj, true
	}
	c, _ := obj.(*compact)
	if c == nil {
		return
	}
	u, err := c.object()
	if err != nil {
		utilruntime.HandleError(err) // cannot happen: the cache wrote that JSON
		return
	}
	ev := Event{GVR: e.gvr, Key: c.key, Deleted: deleted, Object: u}
	if subs := e.view.Load(); subs != nil {
		for _, s := range *subs {
			s.s.Notify(ev)
		}
	}
	if delta != 0 {
		m.metrics.objects(e.gvr, int(e.count.Add(delta)))
	}
}

// project reduces u, in place, to what the subscribers read before it is
// cached (and handed to them): rows, not objects, are what the operator
// keeps. Server-side apply bookkeeping goes even when everything is kept.
func project(u *unstructured.Unstructured, kept *projection.Set) {
	StripBookkeeping(u.Object)
	kept.Prune(u.Object) // the decoder's fresh maps, pruned in place: nothing copied
}

// StripBookkeeping removes, in place, what no row may carry: managedFields
// and the last-applied annotation, which hold a copy of the object as
// applied (a Secret's data among it), so an attribute reading
// metadata.annotations cannot leak what the profile never selected. The
// operator and the CLI both strip before anything is evaluated.
func StripBookkeeping(obj map[string]any) {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return
	}
	delete(md, "managedFields")
	if ann, ok := md["annotations"].(map[string]any); ok {
		delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
		if len(ann) == 0 {
			delete(md, "annotations")
		}
	}
}

// entryStore reads the entry's current generation, so a subscriber always
// reads the newest synced cache, never a stopped one.
type entryStore struct{ e *entry }

// List decodes the cached objects of the namespaces named, read through
// the namespace index, or of all when none is.
func (s entryStore) List(namespaces ...string) (out []*unstructured.Unstructured, unreadable []string) {
	idx := s.e.current.Load().informer.GetIndexer()
	var objs []any
	switch {
	case len(namespaces) == 0:
		objs = idx.List()
	case !s.e.namespaced:
		return nil, nil // cluster-scoped objects are in no namespace
	default:
		for _, ns := range namespaces {
			in, err := idx.ByIndex(cache.NamespaceIndex, ns)
			if err != nil {
				utilruntime.HandleError(err)
				continue
			}
			objs = append(objs, in...)
		}
	}
	out = make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		c, ok := o.(*compact)
		if !ok {
			continue
		}
		u, err := c.decode()
		if err != nil {
			utilruntime.HandleError(err)
			unreadable = append(unreadable, c.key)
			continue
		}
		out = append(out, u)
	}
	return out, unreadable
}

// Namespaces names the namespaces holding cached objects, from the
// namespace index (no object is decoded).
func (s entryStore) Namespaces() ([]string, bool) {
	if !s.e.namespaced {
		return nil, false
	}
	return s.e.current.Load().informer.GetIndexer().ListIndexFuncValues(cache.NamespaceIndex), true
}

// compactNamespace is the namespace index's function: a cached object's
// namespace, read from its key.
func compactNamespace(obj any) ([]string, error) {
	c, ok := obj.(*compact)
	if !ok {
		return nil, nil
	}
	return []string{c.namespace()}, nil
}

// Stop stops every informer.
func (m *Manager) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for gvr, e := range m.informers {
		e.stopLocked()
		delete(m.informers, gvr)
	}
	if m.namespaces != nil {
		m.namespaces.cancel()
		m.namespaces = nil
	}
	m.nsPolled = nil
}
