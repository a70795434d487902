package target

import (
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
	drained := make(chan map[pendingKey]informers.Event, 10)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(wake); ok {
			wakes.Add(1)
			<-release // busy while events keep arriving
			evs, _, _ := inbox.drain()
			drained <- evs
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
			evs, _, _ := inbox.drain()
			got <- len(evs)
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
