package target_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/actors/target"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/pipeline/model/collect"
	"kollect.dev/kollect/pipeline/model/extract"
	"kollect.dev/kollect/pipeline/model/selection"
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

// A panic while evaluating one object fails that object alone, reported as
// an extraction failure; the actor is not restarted and keeps collecting.
func TestAPanicInEvaluationFailsOneObjectNotTheTarget(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	ex, err := extract.Compile([]extract.Attribute{{Name: "replicas", Path: "$.spec.replicas"}}, extract.NewScrubber())
	if err != nil {
		t.Fatal(err)
	}
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	got := make(chan *messages.RowsChanged, 10)
	inv := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*messages.RowsChanged); ok {
			got <- m
		}
	}))
	rep := &lastReport{}
	inbox := target.NewInbox(sys.Root, nil)
	tgt := sys.Root.Spawn(target.Props(inbox, panickyNamespaces{}, rep, nil, "t"))
	ref := messages.TargetRef{Kind: "KollectTarget", Namespace: "ok", Name: "t"}
	store := listStore{objectIn("ok", "fine"), objectIn("boom", "bad")}
	sys.Root.Send(tgt, &messages.Subscribe{Inventory: inv})
	sys.Root.Send(tgt, &target.Configure{Config: &target.Config{Ref: ref, Sources: []target.Source{{GVR: gvr, GVK: gvk, Store: store}},
		Evaluator: &collect.Evaluator{TargetNamespace: ref.Namespace, TargetName: ref.Name, ProfileGVK: gvk, Selection: &selection.Target{}, Extractor: ex}}})
	first := receive(t, got)
	if !first.Replace || len(first.Upserts) != 1 || first.Upserts[0].Name != "fine" {
		t.Fatalf("want the complete list with the one object that evaluates, got %+v", first)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		r := rep.get()
		if r.ExtractionFailures == 1 && strings.Contains(r.LastExtractionError, "panicked: unforeseen input") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("want one extraction failure naming the panic, got %+v", r)
		}
	}
	// The actor still collects.
	inbox.Notify(informers.Event{GVR: gvr, Key: "ok/later", Object: objectIn("ok", "later")})
	if m := receive(t, got); m.Replace || len(m.Upserts) != 1 || m.Upserts[0].Name != "later" {
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
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	ex, err := extract.Compile([]extract.Attribute{{Name: "replicas", Path: "$.spec.replicas"}}, extract.NewScrubber())
	if err != nil {
		t.Fatal(err)
	}
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	got := make(chan *messages.RowsChanged, 10)
	inv := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*messages.RowsChanged); ok {
			got <- m
		}
	}))
	rep := &lastReport{}
	tgt := sys.Root.Spawn(target.Props(target.NewInbox(sys.Root, nil), panickyNamespaces{}, rep, nil, "t"))
	ref := messages.TargetRef{Kind: "KollectTarget", Namespace: "ok", Name: "t"}
	store := &changingStore{}
	configure := func() {
		sys.Root.Send(tgt, &target.Configure{Config: &target.Config{Ref: ref, Sources: []target.Source{{GVR: gvr, GVK: gvk, Store: store}},
			Evaluator: &collect.Evaluator{TargetNamespace: ref.Namespace, TargetName: ref.Name, ProfileGVK: gvk, Selection: &selection.Target{}, Extractor: ex}}})
	}
	names := func(m *messages.RowsChanged) []string {
		var out []string
		for _, r := range m.Upserts {
			out = append(out, r.Name)
		}
		slices.Sort(out)
		return out
	}
	sys.Root.Send(tgt, &messages.Subscribe{Inventory: inv})

	store.set([]*unstructured.Unstructured{objectIn("ok", "fine"), objectIn("ok", "other")})
	configure()
	if m := receive(t, got); !m.Replace || !slices.Equal(names(m), []string{"fine", "other"}) {
		t.Fatalf("first list: want fine and other, got %v", names(m))
	}

	// A new configuration (new source values) while other, and an object
	// that never had a row, cannot be read.
	store.set([]*unstructured.Unstructured{objectIn("ok", "fine")}, "ok/other", "ok/never")
	configure()
	if m := receive(t, got); !m.Replace || !slices.Equal(names(m), []string{"fine", "other"}) {
		t.Fatalf("with other unreadable: want fine and other's last row, got %v", names(m))
	}
	waitReport(t, rep, func(r target.Report) bool {
		return r.Count == 2 && r.ExtractionFailures == 2 && strings.Contains(r.LastExtractionError, "could not be read")
	})

	// Read again, and gone: now it is a delete, and nothing is failing.
	store.set([]*unstructured.Unstructured{objectIn("ok", "fine")})
	configure()
	if m := receive(t, got); !m.Replace || !slices.Equal(names(m), []string{"fine"}) {
		t.Fatalf("after other is gone: want fine alone, got %v", names(m))
	}
	waitReport(t, rep, func(r target.Report) bool { return r.Count == 1 && r.ExtractionFailures == 0 })
}

func waitReport(t *testing.T, rep *lastReport, ok func(target.Report) bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(rep.get()); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("report: got %+v", rep.get())
		}
	}
}
