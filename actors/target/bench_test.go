package target_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/actors/target"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/collect"
	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/model/selection"
)

type emptyStore struct{}

func (emptyStore) List(...string) ([]*unstructured.Unstructured, []string) { return nil, nil }
func (emptyStore) Namespaces() ([]string, bool)                            { return nil, false }

type noNamespaces struct{}

func (noNamespaces) Namespace(string) *unstructured.Unstructured { return nil }

type countReporter struct {
	want int
	done chan struct{}
}

func (c *countReporter) InventoryReport(r inventory.Report) {
	if r.ItemCount >= c.want {
		select {
		case c.done <- struct{}{}:
		default:
		}
	}
}

func object(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{
			"name": fmt.Sprintf("demo-%06d", i), "namespace": fmt.Sprintf("ns-%d", i%13), "uid": fmt.Sprintf("uid-%06d", i),
			"labels": map[string]any{"app": "kollect", "app.kubernetes.io/part-of": fmt.Sprintf("tier-%d", i%5)},
		},
		"spec":   map[string]any{"replicas": int64(i%9 + 1)},
		"status": map[string]any{"readyReplicas": int64(i % 9)},
	}}
}

var (
	benchGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	benchGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
)

// benchPipeline spawns a target reading store (three attributes, one of
// them CEL) into an inventory; it returns the target's inbox and a
// reporter that signals once the inventory holds want rows.
func benchPipeline(b *testing.B, sys *actor.ActorSystem, store informers.Store, want int) (*target.Inbox, *countReporter) {
	ex, err := extract.Compile([]extract.Attribute{
		{Name: "name", Path: "{.metadata.name}"},
		{Name: "replicas", Path: "{.spec.replicas}"},
		{Name: "ready", Path: "cel:has(object.status.readyReplicas) ? object.status.readyReplicas : 0"},
	}, extract.NewScrubber())
	if err != nil {
		b.Fatal(err)
	}
	rep := &countReporter{want: want, done: make(chan struct{}, 1)}
	inv := sys.Root.Spawn(inventory.Props(rep, nil, "bench", nil, nil))
	inbox := target.NewInbox(sys.Root, nil)
	ref := messages.TargetRef{Kind: "KollectTarget", Namespace: "default", Name: "bench"}
	tgt := sys.Root.Spawn(target.Props(inbox, noNamespaces{}, nil, nil, "bench", nil))
	sys.Root.Send(tgt, &target.Configure{Config: &target.Config{Ref: ref, Sources: []target.Source{{GVR: benchGVR, GVK: benchGVK, Store: store}},
		Evaluator: &collect.Evaluator{TargetNamespace: ref.Namespace, TargetName: ref.Name, ProfileGVK: benchGVK, Selection: &selection.Set{}, Extractor: ex}}})
	sys.Root.Send(inv, &inventory.Configure{Config: &inventory.Config{ID: rows.Identity{Namespace: "default", Name: "bench"},
		Sources: []inventory.Source{{Ref: ref, PID: tgt}}, BatchWindow: time.Millisecond}})
	return inbox, rep
}

// wait fails the benchmark when the inventory never holds every row.
func (c *countReporter) wait(b *testing.B) {
	select {
	case <-c.done:
	case <-time.After(5 * time.Minute):
		b.Fatal("the inventory never held every row")
	}
}

// BenchmarkRouterToInventory measures events per second from the router
// (the Inbox an informer notifies) through a Target actor (selection,
// extraction, row encoding) into an Inventory actor, and the heap retained
// per row once the source objects are gone.
func BenchmarkRouterToInventory(b *testing.B) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	events := make([]informers.Event, b.N)
	for i := range events {
		o := object(i)
		events[i] = informers.Event{GVR: benchGVR, Key: o.GetNamespace() + "/" + o.GetName(), Object: o}
	}

	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	inbox, rep := benchPipeline(b, sys, emptyStore{}, b.N)

	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range events {
		inbox.Notify(events[i])
	}
	rep.wait(b)
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")

	runtime.KeepAlive(events) // the events stay live until the sink holds every row
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if after.HeapAlloc > before.HeapAlloc {
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "B/row")
	}
}

// BenchmarkListedTargetToInventory measures a target's first list (what an
// operator does for every target when it starts): 100,000 cached objects
// evaluated and handed to an inventory as one complete row set.
func BenchmarkListedTargetToInventory(b *testing.B) {
	const objects = 100_000
	store := make(listStore, objects)
	for i := range store {
		store[i] = object(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		sys := actor.NewActorSystem()
		_, rep := benchPipeline(b, sys, store, objects)
		rep.wait(b)
		sys.Shutdown()
	}
}
