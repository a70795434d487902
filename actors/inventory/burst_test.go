package inventory_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/internal/eventually"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// exports records how many rows each export held.
type exports struct {
	mu   sync.Mutex
	held []int
}

func (e *exports) Export(_ context.Context, d *rows.Delta) (sinks.Ack, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.held = append(e.held, len(d.Next.Rows))
	return sinks.Ack{Rows: len(d.Next.Rows)}, nil
}

func (e *exports) get() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int(nil), e.held...)
}

// waitExports waits until the sink saw n exports.
func (e *exports) waitExports(t *testing.T, n int, within time.Duration) []int {
	t.Helper()
	eventually.Check(t, within, fmt.Sprintf("%d exports", n), func() error {
		if got := e.get(); len(got) < n {
			return fmt.Errorf("%d so far: %v", len(got), got)
		}
		return nil
	})
	return e.get()
}

// An export that is due waits while a target hands over a burst (its
// changes say more are waiting), and goes out when the burst ends: the
// sink never gets the burst's partial state. A target that never says the
// burst ended is exported after at most two seconds.
func TestAnExportWaitsForTheEndOfABurst(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	ref := messages.TargetRef{Kind: "KollectTarget", Namespace: "default", Name: "t"}
	tgt := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {})) // subscriptions are not answered: the test sends the rows
	rec := &exports{}
	inv := sys.Root.Spawn(inventory.Props(nil, nil, "burst", nil, nil))
	sys.Root.Send(inv, &inventory.Configure{Config: &inventory.Config{ID: rows.Identity{Namespace: "default", Name: "inv"},
		Sources: []inventory.Source{{Ref: ref, PID: tgt}}, BatchWindow: 10 * time.Millisecond,
		Bindings: []sink.Config{{Inventory: "default/inv", Key: "event/rec", Type: "rec", BackendID: "burst_test", Backend: rec}}}})
	origin := &rows.Origin{TargetNamespace: "default", TargetName: "t", Version: "v1", Kind: "ConfigMap"}
	row := func(i int) *rows.Row {
		r, err := rows.New(rows.Row{Origin: origin, Namespace: "ns", Name: fmt.Sprintf("cm-%d", i), UID: fmt.Sprint(i)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	send := func(more bool, rs ...*rows.Row) {
		sys.Root.Send(inv, &messages.RowsChanged{Target: ref, Upserts: rs, More: more})
	}
	sys.Root.Send(inv, &messages.RowsChanged{Target: ref, Replace: true, Upserts: []*rows.Row{row(0)}})
	rec.waitExports(t, 1, 5*time.Second)

	send(true, row(1))
	send(true, row(2))
	time.Sleep(300 * time.Millisecond) // thirty batch windows
	if got := rec.get(); len(got) != 1 {
		t.Fatalf("exports %v while the target's burst went on, want only the first", got)
	}
	start := time.Now()
	send(false, row(3)) // the burst's last slice
	if got := rec.waitExports(t, 2, time.Second); got[1] != 4 {
		t.Fatalf("exports %v: the burst's end should hold all 4 rows", got)
	}
	t.Logf("the burst's end was exported %v after its last slice", time.Since(start))

	start = time.Now()
	send(true, row(4)) // a burst whose end never comes
	if got := rec.waitExports(t, 3, 5*time.Second); got[2] != 5 {
		t.Fatalf("exports %v: the held export should hold all 5 rows", got)
	}
	if waited := time.Since(start); waited < 2*time.Second {
		t.Fatalf("a burst that never ends was exported after %v, before the two seconds it may wait", waited)
	}
}
