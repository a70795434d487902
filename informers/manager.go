package informers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
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

	"kollect.dev/kollect/model/projection"
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
	// access, when set, says where the operator may list: an informer that
	// would span several namespaces lists each of them on its own when
	// it may not list them all at once (CheckAccess).
	access Access
}

// Access says whether the operator may list and watch a resource in a
// namespace ("" for every namespace at once).
type Access interface {
	CanList(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (bool, error)
}

// CheckAccess makes informers that span several namespaces ask a before
// listing: where the operator may not list every namespace at once, they
// list each namespace it may list, and a subscriber learns which of its
// namespaces it may not (Acquire's forbidden). Call before Acquire.
func (m *Manager) CheckAccess(a Access) { m.access = a }

// ForbiddenError is what Acquire returns when the operator may list none
// of the namespaces a subscriber reads.
type ForbiddenError struct {
	GVR        schema.GroupVersionResource
	Namespaces []string
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("the operator may not list %s in namespace %s: grant it list and watch there (a Role), or read other namespaces",
		e.GVR.Resource, strings.Join(e.Namespaces, ", "))
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
	// informer is the namespace cache's (StartNamespaces); a resource's
	// generation keeps its informers in parts.
	informer cache.SharedIndexInformer
	// parts are the generation's informers by the namespace each lists:
	// one keyed "" lists every namespace.
	parts map[string]cache.SharedIndexInformer
	// scope is where it lists: nil for every namespace, else the
	// namespaces (sorted), each by its own informer.
	scope     []string
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
	s          Subscriber
	namespaces []string // nil: every namespace
	reads      *projection.Set
}

// sameScope says whether two scopes list the same namespaces.
func sameScope(a, b []string) bool { return (a == nil) == (b == nil) && slices.Equal(a, b) }

// synced says whether every part has listed.
func (g *generation) synced() bool {
	for _, inf := range g.parts {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// indexers returns the parts' caches that hold objects of namespaces
// (every part when none is named).
func (g *generation) indexers(namespaces ...string) []cache.Indexer {
	if all := g.parts[""]; all != nil || len(namespaces) == 0 {
		out := make([]cache.Indexer, 0, len(g.parts))
		for _, ns := range slices.Sorted(maps.Keys(g.parts)) {
			out = append(out, g.parts[ns].GetIndexer())
		}
		return out
	}
	var out []cache.Indexer
	for _, ns := range namespaces {
		if inf := g.parts[ns]; inf != nil {
			out = append(out, inf.GetIndexer())
		}
	}
	return out
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

// Acquire subscribes id to the objects of gvk. namespaces narrow what the
// subscriber needs (nil: every namespace); the informer lists the union of
// what its subscribers name, by one informer per namespace where the
// operator may not list them all at once (CheckAccess), and every
// namespace as soon as one subscriber needs them all. reads is the part of
// each object the subscriber reads (nil: all of it); the cache keeps the
// union of what its subscribers read, and lists again when a new
// subscriber reads more. It returns once the informer has listed, with
// the subscriber's namespaces the operator may not list (forbidden: their
// objects are not in the store), or with an error that says why it could
// not (a *ForbiddenError when it may list none of them).
func (m *Manager) Acquire(ctx context.Context, gvk schema.GroupVersionKind, id string, namespaces []string, reads *projection.Set, s Subscriber) (gvr schema.GroupVersionResource, store Store, forbidden []string, err error) {
	gvr, namespaced, err := m.Resolve(gvk)
	if err != nil {
		return gvr, nil, nil, err
	}
	if !namespaced {
		namespaces = nil
	} else if namespaces != nil {
		namespaces = slices.Compact(slices.Sorted(slices.Values(namespaces)))
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
	e.subs[id] = sub{s: s, namespaces: namespaces, reads: reads}
	e.publish()
	want, denied := m.desiredScope(ctx, e)
	if g := e.newest.Load(); g == nil || !sameScope(want, g.scope) || !g.kept.Covers(reads) {
		m.restartLocked(e, want)
	}
	m.mu.Unlock()
	if refused := deniedOf(namespaces, denied); len(namespaces) > 0 && len(refused) == len(namespaces) {
		m.Release(gvr, id)
		return gvr, nil, nil, &ForbiddenError{GVR: gvr, Namespaces: refused}
	}

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
			// The generation that serves it may be a later one than its own
			// rebuild, for other subscribers: what it lists is what counts.
			forbidden = unlisted(namespaces, g.scope)
			if len(namespaces) > 0 && len(forbidden) == len(namespaces) {
				m.Release(gvr, id)
				return gvr, nil, nil, &ForbiddenError{GVR: gvr, Namespaces: forbidden}
			}
			return gvr, entryStore{e}, forbidden, nil
		case <-g.abandoned:
		case <-syncCtx.Done():
			m.Release(gvr, id)
			return gvr, nil, nil, fmt.Errorf("list %s: informer did not sync within %s (is the operator allowed to list and watch it?)", gvr, m.syncWait)
		}
	}
}

// unlisted returns the namespaces a generation of scope does not list.
func unlisted(namespaces, scope []string) []string {
	var out []string
	for _, ns := range namespaces {
		if scope != nil && !slices.Contains(scope, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// deniedOf returns the namespaces that denied holds, in order.
func deniedOf(namespaces []string, denied map[string]bool) []string {
	var out []string
	for _, ns := range namespaces {
		if denied[ns] {
			out = append(out, ns)
		}
	}
	return out
}

// desiredScope is where e's informer should list for its subscribers now:
// every namespace when one of them needs them all; else the namespaces
// they name, at once when there is one or the operator may list every
// namespace, else each namespace it may list on its own (denied: the
// others). An access check that fails lists the namespace anyway: the
// informer's own list then says whether it may.
func (m *Manager) desiredScope(ctx context.Context, e *entry) (scope []string, denied map[string]bool) {
	union := map[string]bool{}
	for _, s := range e.subs {
		if s.namespaces == nil {
			return nil, nil
		}
		for _, ns := range s.namespaces {
			union[ns] = true
		}
	}
	names := slices.Sorted(maps.Keys(union))
	if m.access == nil {
		if len(names) == 1 {
			return names, nil
		}
		return nil, nil
	}
	checkCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if len(names) > 1 {
		if ok, err := m.access.CanList(checkCtx, e.gvr, ""); err == nil && ok {
			return nil, nil
		}
	}
	denied = map[string]bool{}
	scope = []string{}
	for _, ns := range names {
		if ok, err := m.access.CanList(checkCtx, e.gvr, ns); err == nil && !ok {
			denied[ns] = true
			continue
		}
		scope = append(scope, ns)
	}
	return scope, denied
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
	want, _ := m.desiredScope(context.Background(), e)
	reads := e.reads()
	if cur := e.current.Load(); e.pending() != nil && sameScope(cur.scope, want) && cur.kept.Covers(reads) {
		// The rebuild was for a subscriber that gave up (it could not
		// list): the running generation serves everyone left. Events went
		// to the abandoned one meanwhile, so subscribers list again.
		e.abandonLocked()
		e.resyncSubscribers()
		return
	}
	if !sameScope(want, e.newest.Load().scope) {
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

// restartLocked builds a new generation of e's informer for scope (nil:
// every namespace, else one informer per namespace named), keeping what
// the subscribers read now, and hands over to it once it has synced (see
// entry). A generation still listing is abandoned.
func (m *Manager) restartLocked(e *entry, scope []string) {
	e.abandonLocked()
	// A namespaced resource's cache is indexed by namespace: a namespace
	// whose labels change is re-evaluated from its own objects, not from a
	// scan of the whole cache per target (namespace churn under many
	// tenants). It costs a set entry per object, about 6 MB at 100,000.
	indexers := cache.Indexers{}
	if e.namespaced {
		indexers[cache.NamespaceIndex] = compactNamespace
	}
	kept, cd := e.reads(), &codec{}
	ctx, cancel := context.WithCancel(context.Background())
	g := &generation{parts: map[string]cache.SharedIndexInformer{}, scope: scope, kept: kept, cancel: cancel,
		swapped: make(chan struct{}), abandoned: make(chan struct{})}
	listed := []string{metav1.NamespaceAll}
	if scope != nil {
		listed = scope
	}
	for _, ns := range listed {
		inf := dynamicinformer.NewFilteredDynamicInformer(m.dyn, e.gvr, ns, m.resync, indexers, nil).Informer()
		_ = inf.SetTransform(func(obj any) (any, error) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return obj, nil // a *compact: a periodic resync of what is cached
			}
			project(u, kept)
			return toCompact(u, cd)
		})
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
		g.parts[ns] = inf
	}
	e.count.Store(0)
	m.metrics.scope(e.gvr, scope == nil)
	first := e.current.Load() == nil
	if first {
		e.current.Store(g)
	}
	e.newest.Store(g)
	for _, inf := range g.parts {
		go inf.Run(ctx.Done())
	}
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), g.synced) {
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
	g := s.e.current.Load()
	var objs []any
	switch {
	case len(namespaces) == 0:
		for _, idx := range g.indexers() {
			objs = append(objs, idx.List()...)
		}
	case !s.e.namespaced:
		return nil, nil // cluster-scoped objects are in no namespace
	default:
		for _, ns := range namespaces {
			for _, idx := range g.indexers(ns) {
				in, err := idx.ByIndex(cache.NamespaceIndex, ns)
				if err != nil {
					utilruntime.HandleError(err)
					continue
				}
				objs = append(objs, in...)
			}
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
	var out []string
	for _, idx := range s.e.current.Load().indexers() {
		out = append(out, idx.ListIndexFuncValues(cache.NamespaceIndex)...)
	}
	return out, true
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
