package target_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"kollect.dev/kollect/actors"
	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/actors/target"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/internal/eventually"
	"kollect.dev/kollect/model/collect"
	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/selection"
)

// panickyNamespaces panics when asked about namespace "boom": a stand-in
// for any bug or unforeseen input inside selection or extraction.
type panickyNamespaces struct{}

func (panickyNamespaces) Namespace(name string) *unstructured.Unstructured {
	if name == "boom" {
		panic("unforeseen input")
	}
	return nil
}

type listStore []*unstructured.Unstructured

func (s listStore) List(...string) ([]*unstructured.Unstructured, []string) { return s, nil }
func (listStore) Namespaces() ([]string, bool)                              { return nil, false }

// changingStore lists what it holds at the time, and names the keys it
// holds but cannot read.
type changingStore struct {
	mu         sync.Mutex
	objs       []*unstructured.Unstructured
	unreadable []string
}

func (s *changingStore) set(objs []*unstructured.Unstructured, unreadable ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs, s.unreadable = objs, unreadable
}

func (*changingStore) Namespaces() ([]string, bool) { return nil, false }

func (s *changingStore) List(...string) ([]*unstructured.Unstructured, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.objs, s.unreadable
}

type lastReport struct {
	mu sync.Mutex
	r  target.Report
}

func (l *lastReport) TargetReport(r target.Report) { l.mu.Lock(); l.r = r; l.mu.Unlock() }
func (l *lastReport) get() target.Report           { l.mu.Lock(); defer l.mu.Unlock(); return l.r }

func objectIn(ns, name string) *unstructured.Unstructured {
	o := object(0)
	o.SetNamespace(ns)
	o.SetName(name)
	o.SetUID(k8stypes.UID("uid-" + ns + "/" + name))
	return o
}

// askedStore records the namespaces each List asked for.
type askedStore struct {
	mu    sync.Mutex
	asked [][]string
}

func (*askedStore) Namespaces() ([]string, bool) { return nil, false }

func (s *askedStore) List(nss ...string) ([]*unstructured.Unstructured, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, slices.Clone(nss))
	return nil, nil
}

func (s *askedStore) calls() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.asked)
}

// rig is a subscribed target actor of one Deployment source: its rows
// reach got, its reports rep.
type rig struct {
	sys   *actor.ActorSystem
	tgt   *actor.PID
	inbox *target.Inbox
	got   chan *messages.RowsChanged
	rep   *lastReport
	gvr   schema.GroupVersionResource
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return newRigWith(t, panickyNamespaces{}, nil)
}

// newRigWith is a rig whose target reads namespaces from ns and reports
// to metrics (nil: none).
func newRigWith(t *testing.T, ns target.Namespaces, metrics *actors.Metrics) *rig {
	t.Helper()
	r := &rig{sys: actor.NewActorSystem(), got: make(chan *messages.RowsChanged, 10), rep: &lastReport{},
		gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}}
	t.Cleanup(r.sys.Shutdown)
	inv := r.sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*messages.RowsChanged); ok {
			r.got <- m
		}
	}))
	r.inbox = target.NewInbox(r.sys.Root, metrics)
	r.tgt = r.sys.Root.Spawn(target.Props(r.inbox, ns, r.rep, metrics, "t", nil))
	r.sys.Root.Send(r.tgt, &messages.Subscribe{Inventory: inv})
	return r
}

// configure gives the target a new configuration (new source values) that
// reads store and keeps spec.replicas.
func (r *rig) configure(t *testing.T, store informers.Store) {
	t.Helper()
	r.configureWith(t, store, &selection.Set{})
}

// configureWith is configure with the selection sel.
func (r *rig) configureWith(t *testing.T, store informers.Store, sel *selection.Set) {
	t.Helper()
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	ex, err := extract.Compile([]extract.Attribute{{Name: "replicas", Path: "$.spec.replicas"}}, extract.NewScrubber())
	if err != nil {
		t.Fatal(err)
	}
	ref := messages.TargetRef{Kind: "KollectTarget", Namespace: "ok", Name: "t"}
	r.sys.Root.Send(r.tgt, &target.Configure{Config: &target.Config{Ref: ref, Sources: []target.Source{{GVR: r.gvr, GVK: gvk, Store: store}},
		Evaluator: &collect.Evaluator{TargetNamespace: ref.Namespace, TargetName: ref.Name, ProfileGVK: gvk, Selection: sel, Extractor: ex}}})
}

// A panic while evaluating one object fails that object alone, reported as
// an extraction failure; the actor is not restarted and keeps collecting.
func TestAPanicInEvaluationFailsOneObjectNotTheTarget(t *testing.T) {
	r := newRig(t)
	r.configure(t, listStore{objectIn("ok", "fine"), objectIn("boom", "bad")})
	first := receive(t, r.got)
	if !first.Replace || len(first.Upserts) != 1 || first.Upserts[0].Name != "fine" {
		t.Fatalf("want the complete list with the one object that evaluates, got %+v", first)
	}
	waitReport(t, r.rep, func(rep target.Report) bool {
		return rep.ExtractionFailures == 1 && strings.Contains(rep.LastExtractionError, "panicked: unforeseen input")
	})
	// The actor still collects.
	r.inbox.Notify(informers.Event{GVR: r.gvr, Key: "ok/later", Object: objectIn("ok", "later")})
	if m := receive(t, r.got); m.Replace || len(m.Upserts) != 1 || m.Upserts[0].Name != "later" {
		t.Fatalf("want the next object as an upsert, got %+v", m)
	}
}

func receive(t *testing.T, ch chan *messages.RowsChanged) *messages.RowsChanged {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no rows within 5s")
		return nil
	}
}

// An object whose cached copy cannot be read is not taken for deleted when
// the target evaluates everything again: its last row stays in the
// complete list, and the failure is reported until it reads again.
func TestAnUnreadableObjectKeepsItsRowThroughAResync(t *testing.T) {
	r := newRig(t)
	store := &changingStore{}
	names := func(m *messages.RowsChanged) []string {
		var out []string
		for _, row := range m.Upserts {
			out = append(out, row.Name)
		}
		slices.Sort(out)
		return out
	}
	store.set([]*unstructured.Unstructured{objectIn("ok", "fine"), objectIn("ok", "other")})
	r.configure(t, store)
	if m := receive(t, r.got); !m.Replace || !slices.Equal(names(m), []string{"fine", "other"}) {
		t.Fatalf("first list: want fine and other, got %v", names(m))
	}

	// A new configuration (new source values) while other, and an object
	// that never had a row, cannot be read.
	store.set([]*unstructured.Unstructured{objectIn("ok", "fine")}, "ok/other", "ok/never")
	r.configure(t, store)
	if m := receive(t, r.got); !m.Replace || !slices.Equal(names(m), []string{"fine", "other"}) {
		t.Fatalf("with other unreadable: want fine and other's last row, got %v", names(m))
	}
	waitReport(t, r.rep, func(rep target.Report) bool {
		return rep.Count == 2 && rep.ExtractionFailures == 2 && strings.Contains(rep.LastExtractionError, "could not be read")
	})

	// Read again, and gone: now it is a delete, and nothing is failing.
	store.set([]*unstructured.Unstructured{objectIn("ok", "fine")})
	r.configure(t, store)
	if m := receive(t, r.got); !m.Replace || !slices.Equal(names(m), []string{"fine"}) {
		t.Fatalf("after other is gone: want fine alone, got %v", names(m))
	}
	waitReport(t, r.rep, func(rep target.Report) bool { return rep.Count == 1 && rep.ExtractionFailures == 0 })
}

func waitReport(t *testing.T, rep *lastReport, ok func(target.Report) bool) {
	t.Helper()
	eventually.Check(t, 5*time.Second, "the report", func() error {
		if got := rep.get(); !ok(got) {
			return fmt.Errorf("got %+v", got)
		}
		return nil
	})
}

// gateNamespaces blocks the evaluation of an object in namespace "gate"
// until open is closed, and says so on reached.
type gateNamespaces struct{ reached, open chan struct{} }

func (g gateNamespaces) Namespace(name string) *unstructured.Unstructured {
	if name == "gate" {
		g.reached <- struct{}{}
		<-g.open
	}
	return nil
}

// Every slice of a burst is timed in the dispatch histogram (a full
// slice's map goes back to the inbox, cleared, for the next slice; its
// size was read after that, so the slices of a burst were never
// observed), and every change but the burst's last says more are waiting.
func TestEverySliceOfABurstIsTimed(t *testing.T) {
	reg := prometheus.NewRegistry()
	gate := gateNamespaces{reached: make(chan struct{}, 1), open: make(chan struct{})}
	r := newRigWith(t, gate, actors.NewMetrics(reg))
	r.configure(t, listStore{})
	receive(t, r.got) // the complete list: empty
	r.inbox.Notify(informers.Event{GVR: r.gvr, Key: "gate/first", Object: objectIn("gate", "first")})
	select { // the actor holds the first event alone
	case <-gate.reached:
	case <-time.After(5 * time.Second):
		t.Fatal("the first event was never evaluated")
	}
	const burst = 2*8192 + 100 // two full slices and one of 100, while the actor is held
	for i := range burst {
		name := fmt.Sprintf("o-%05d", i)
		r.inbox.Notify(informers.Event{GVR: r.gvr, Key: "ns/" + name, Object: objectIn("ns", name)})
	}
	close(gate.open)
	var more []bool
	for got := 0; got < burst+1; {
		m := receive(t, r.got)
		got += len(m.Upserts)
		more = append(more, m.More)
	}
	if !slices.Equal(more, []bool{false, true, true, false}) {
		t.Fatalf("changes said more was waiting: %v, want false (the first event alone), true, true, false", more)
	}
	waitFor(t, func() bool { return dispatchCount(t, reg) == 4 }, func() string {
		return fmt.Sprintf("%d slices timed, want 4 (the first event, two full slices, the rest)", dispatchCount(t, reg))
	})
}

func dispatchCount(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "kollect_collect_dispatch_duration_seconds" {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}

func waitFor(t *testing.T, ok func() bool, why func() string) {
	t.Helper()
	eventually.Check(t, 5*time.Second, "the condition", func() error {
		if ok() {
			return nil
		}
		return errors.New(why())
	})
}

// A target frozen in the middle of a burst says the burst ended, so no
// inventory holds its exports for the rest, which it drops.
func TestAFrozenTargetEndsItsBurst(t *testing.T) {
	gate := gateNamespaces{reached: make(chan struct{}, 1), open: make(chan struct{})}
	r := newRigWith(t, gate, nil)
	r.configure(t, listStore{})
	receive(t, r.got) // the complete list: empty
	r.inbox.Notify(informers.Event{GVR: r.gvr, Key: "gate/first", Object: objectIn("gate", "first")})
	select {
	case <-gate.reached:
	case <-time.After(5 * time.Second):
		t.Fatal("the first event was never evaluated")
	}
	for i := range 2*8192 + 100 {
		name := fmt.Sprintf("o-%05d", i)
		r.inbox.Notify(informers.Event{GVR: r.gvr, Key: "ns/" + name, Object: objectIn("ns", name)})
	}
	r.sys.Root.Send(r.tgt, &target.Freeze{}) // behind the burst's first wake-up
	close(gate.open)
	first, slice, end := receive(t, r.got), receive(t, r.got), receive(t, r.got)
	if first.More || len(first.Upserts) != 1 || !slice.More || len(slice.Upserts) != 8192 {
		t.Fatalf("want the first event alone, then a slice of 8192 with more waiting; got %d (more %v), %d (more %v)",
			len(first.Upserts), first.More, len(slice.Upserts), slice.More)
	}
	if end.More || len(end.Upserts)+len(end.Deletes) != 0 || end.Replace {
		t.Fatalf("want an empty change that ends the burst, got %d upserts, %d deletes, more %v", len(end.Upserts), len(end.Deletes), end.More)
	}
}

// A namespace the selection rules out by name (a tenant's target closed to
// its own namespace) is never re-evaluated when it changes; one it may
// read is, from that namespace's objects alone.
func TestNamespaceChurnOutsideTheCeilingCostsNothing(t *testing.T) {
	r := newRigWith(t, nsLabels{}, nil)
	store := &askedStore{}
	r.configureWith(t, store, &selection.Set{Within: func(ns string) bool { return ns == "own" }})
	receive(t, r.got) // the complete list: empty
	for i := range 50 {
		r.inbox.NamespaceChanged(fmt.Sprintf("ci-%02d", i))
	}
	r.inbox.NamespaceChanged("own")
	eventually.Check(t, 5*time.Second, "the target's own namespace re-evaluated", func() error {
		if !slices.ContainsFunc(store.calls(), func(nss []string) bool { return slices.Contains(nss, "own") }) {
			return fmt.Errorf("lists: %v", store.calls())
		}
		return nil
	})
	for _, nss := range store.calls()[1:] { // the first is the configuration's full list
		if !slices.Equal(nss, []string{"own"}) {
			t.Errorf("a namespace change listed %v, want only [own]", nss)
		}
	}
}

// nsLabels knows every namespace, without labels.
type nsLabels struct{}

func (nsLabels) Namespace(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetName(name)
	return u
}

// liveNamespaces knows the namespaces in it, without labels.
type liveNamespaces struct {
	mu    sync.Mutex
	names map[string]bool
}

func (l *liveNamespaces) Namespace(name string) *unstructured.Unstructured {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.names[name] {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetName(name)
	return u
}

func (l *liveNamespaces) remove(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.names, name)
}

// A cluster target keeps one origin per namespace it collects; a namespace
// that is deleted takes its origin with it, so namespace churn does not
// grow the target's memory.
func TestADeletedNamespaceTakesItsOriginAlong(t *testing.T) {
	nss := &liveNamespaces{names: map[string]bool{"ci-1": true, "ci-2": true}}
	r := newRigWith(t, nss, nil)
	store := &changingStore{}
	store.set([]*unstructured.Unstructured{objectIn("ci-1", "a"), objectIn("ci-2", "b")})
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	ex, err := extract.Compile([]extract.Attribute{{Name: "replicas", Path: "$.spec.replicas"}}, extract.NewScrubber())
	if err != nil {
		t.Fatal(err)
	}
	ev := &collect.Evaluator{TargetName: "fleet", PerNamespace: true, ProfileGVK: gvk, Selection: &selection.Set{}, Extractor: ex}
	ref := messages.TargetRef{Kind: "KollectClusterTarget", Name: "fleet"}
	r.sys.Root.Send(r.tgt, &target.Configure{Config: &target.Config{Ref: ref, Sources: []target.Source{{GVR: r.gvr, GVK: gvk, Store: store}}, Evaluator: ev}})
	if got := receive(t, r.got); len(got.Upserts) != 2 || ev.Origins() != 2 {
		t.Fatalf("want 2 rows of 2 origins, got %d rows and %d origins", len(got.Upserts), ev.Origins())
	}
	// ci-2 is deleted: its objects first, then the namespace.
	store.set([]*unstructured.Unstructured{objectIn("ci-1", "a")})
	r.inbox.Notify(informers.Event{GVR: r.gvr, Key: "ci-2/b", Deleted: true})
	nss.remove("ci-2")
	r.inbox.NamespaceChanged("ci-2")
	eventually.Check(t, 5*time.Second, "one origin after ci-2 was deleted", func() error {
		if n := ev.Origins(); n != 1 {
			return fmt.Errorf("%d origins", n)
		}
		return nil
	})
}

// indexedStore holds objects by namespace and names those namespaces, as
// the informers' namespace index does; it records what each List asked.
type indexedStore struct {
	mu    sync.Mutex
	objs  map[string][]*unstructured.Unstructured
	asked [][]string
}

func (s *indexedStore) Namespaces() ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.objs)), true
}

func (s *indexedStore) List(nss ...string) ([]*unstructured.Unstructured, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, slices.Clone(nss))
	if len(nss) == 0 {
		nss = slices.Sorted(maps.Keys(s.objs))
	}
	var out []*unstructured.Unstructured
	for _, ns := range nss {
		out = append(out, s.objs[ns]...)
	}
	return out, nil
}

// teamNamespaces labels each namespace team=<its name>.
type teamNamespaces struct{}

func (teamNamespaces) Namespace(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetName(name)
	u.SetLabels(map[string]string{"team": name})
	return u
}

// A target lists only the namespaces its selection may read when it
// evaluates everything (a configuration, a relist): a team's target among
// a thousand decodes its own namespace's objects, not every team's. A
// target that may read none of them lists nothing.
func TestAFullEvaluationListsOnlyReadableNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sel   *selection.Set
		asked []string // nil: no List at all
		rows  int
	}{
		{"by label", &selection.Set{NamespaceSelector: labels.SelectorFromSet(labels.Set{"team": "b"})}, []string{"b"}, 2},
		{"by name", &selection.Set{Included: map[string]bool{"a": true, "c": true}}, []string{"a", "c"}, 3},
		{"none readable", &selection.Set{Within: func(string) bool { return false }}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRigWith(t, teamNamespaces{}, nil)
			store := &indexedStore{objs: map[string][]*unstructured.Unstructured{
				"a": {objectIn("a", "one")}, "b": {objectIn("b", "one"), objectIn("b", "two")}, "c": {objectIn("c", "one"), objectIn("c", "two")},
			}}
			r.configureWith(t, store, tc.sel)
			if got := receive(t, r.got); !got.Replace || len(got.Upserts) != tc.rows {
				t.Fatalf("the complete list holds %d rows, want %d", len(got.Upserts), tc.rows)
			}
			store.mu.Lock()
			defer store.mu.Unlock()
			want := [][]string{tc.asked}
			if tc.asked == nil {
				want = nil
			}
			if !slices.EqualFunc(store.asked, want, slices.Equal) {
				t.Fatalf("listed %v, want %v", store.asked, want)
			}
		})
	}
}
