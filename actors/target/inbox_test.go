package target

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kollect.dev/kollect/actors"
	"kollect.dev/kollect/informers"
)

// TestInboxCoalescesByObjectAndNeverQueuesMoreThanOneWake drives 10,000
// events for 10 objects at an actor that is busy: the informer side never
// blocks, the mailbox holds at most one wake-up, and only the newest event
// per object is handed over.
func TestInboxCoalescesByObjectAndNeverQueuesMoreThanOneWake(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	reg := prometheus.NewRegistry()
	inbox := NewInbox(sys.Root, actors.NewMetrics(reg))
	release := make(chan struct{})
	var wakes atomic.Int32
	drained := make(chan map[pendingKey]pending, 10)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(wake); ok {
			wakes.Add(1)
			<-release // busy while events keep arriving
			drained <- inbox.drain().events
		}
	}))
	inbox.Bind(pid)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for i := 0; i < 10000; i++ {
		inbox.Notify(informers.Event{GVR: gvr, Key: string(rune('a' + i%10))})
	}
	if d := queueDepth(t, reg); d != 10 {
		t.Fatalf("dispatch queue depth %v while the actor is busy, want 10 (one per object)", d)
	}
	close(release)
	select {
	case evs := <-drained:
		if len(evs) != 10 {
			t.Fatalf("want 10 coalesced events (one per object), got %d", len(evs))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the actor was never woken")
	}
	time.Sleep(50 * time.Millisecond)
	if n := wakes.Load(); n != 1 {
		t.Fatalf("want exactly one wake-up for the whole burst, got %d", n)
	}
	if d := queueDepth(t, reg); d != 0 {
		t.Fatalf("dispatch queue depth %v after the drain, want 0", d)
	}
	// Events of a target that goes away leave the depth with it.
	inbox.Notify(informers.Event{GVR: gvr, Key: "late"})
	inbox.Discard()
	if d := queueDepth(t, reg); d != 0 {
		t.Fatalf("dispatch queue depth %v after Discard, want 0", d)
	}
}

func queueDepth(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "kollect_collect_dispatch_queue_depth" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no kollect_collect_dispatch_queue_depth")
	return 0
}

func TestEventsBeforeTheActorStartsAreDelivered(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	inbox := NewInbox(sys.Root, nil)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	inbox.Notify(informers.Event{GVR: gvr, Key: "early"})
	got := make(chan int, 1)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(wake); ok {
			got <- len(inbox.drain().events)
		}
	}))
	inbox.Bind(pid)
	select {
	case n := <-got:
		if n != 1 {
			t.Fatalf("want the early event, got %d events", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an event that arrived before Bind was never delivered")
	}
}

// A burst larger than one batch is handed over in slices of at most
// maxBatch events, each object once across them, with one wake-up queued
// at a time, until nothing is left.
func TestInboxHandsABurstOverInSlices(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	reg := prometheus.NewRegistry()
	inbox := NewInbox(sys.Root, actors.NewMetrics(reg))
	const objects = 3*maxBatch + 100
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for i := range objects {
		inbox.Notify(informers.Event{GVR: gvr, Key: fmt.Sprint(i)})
	}
	seen := map[string]int{}
	var sizes []int
	done := make(chan struct{})
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(wake); !ok {
			return
		}
		evs := inbox.drain().events
		sizes = append(sizes, len(evs))
		for k := range evs {
			seen[k.key]++
		}
		if len(seen) == objects {
			close(done)
		}
	}))
	inbox.Bind(pid)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("handed over %d of %d objects in %v", len(seen), objects, sizes)
	}
	time.Sleep(50 * time.Millisecond) // a wake-up too many would arrive now
	if len(sizes) != 4 || sizes[0] != maxBatch || sizes[3] != 100 {
		t.Fatalf("slices %v, want three of %d and one of 100", sizes, maxBatch)
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("object %s handed over %d times", k, n)
		}
	}
	if d := queueDepth(t, reg); d != 0 {
		t.Fatalf("dispatch queue depth %v after the burst, want 0", d)
	}
}
