package sink_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// lingering is a sink whose first export keeps writing for a while after
// it is cancelled, as a MongoDB bulk write or a queued BigQuery job does.
type lingering struct {
	mu      sync.Mutex
	calls   int
	events  []string
	started chan struct{}
}

func (b *lingering) log(e string) { b.mu.Lock(); b.events = append(b.events, e); b.mu.Unlock() }

func (b *lingering) Export(ctx context.Context, _ *rows.Snapshot) (sinks.Ack, error) {
	b.mu.Lock()
	b.calls++
	n := b.calls
	b.mu.Unlock()
	b.log(fmt.Sprintf("start %d", n))
	if n == 1 {
		close(b.started)
		<-ctx.Done()
		time.Sleep(300 * time.Millisecond) // its last write lands late
	}
	b.log(fmt.Sprintf("end %d", n))
	return sinks.Ack{Changed: true}, nil
}

// A binding replaced while it exports (its sink edited, its Secret
// rotated) hands the sink over only once the cancelled export returned:
// the new binding's export never runs beside the old one's late writes.
func TestAReplacedBindingWaitsForTheExportItCancelled(t *testing.T) {
	be := &lingering{started: make(chan struct{})}
	fence := sink.NewFence()
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	cfg := sink.Config{Inventory: "ns/inv", Key: "snapshot/s", Type: "git", Backend: sinks.Whole(be), Fence: fence}
	old := sys.Root.Spawn(sink.Props(cfg, &sink.Slot{}, nil))
	sys.Root.Send(old, &sink.Offer{Snapshot: snapshot(t, "a")})
	select {
	case <-be.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the first export never started")
	}
	sys.Root.Stop(old)
	repl := sys.Root.Spawn(sink.Props(cfg, &sink.Slot{}, nil))
	sys.Root.Send(repl, &sink.Offer{Snapshot: snapshot(t, "a", "b")})
	want := []string{"start 1", "end 1", "start 2", "end 2"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		be.mu.Lock()
		got := slices.Clone(be.events)
		be.mu.Unlock()
		if len(got) >= len(want) {
			if !slices.Equal(got, want) {
				t.Fatalf("the sink saw %q, want %q", got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sink saw %q, want %q", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
