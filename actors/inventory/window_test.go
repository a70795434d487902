package inventory_test

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	testingclock "k8s.io/utils/clock/testing"

	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/internal/eventually"
	"kollect.dev/kollect/model/rows"
)

// The batch window (the debounce of an inventory's exports) runs on the
// engine's clock: changes wait the whole window, however long it is, and
// go out together once it has passed.
func TestTheBatchWindowRunsOnTheEnginesClock(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	clk := testingclock.NewFakeClock(time.Unix(1_800_000_000, 0))
	ref := messages.TargetRef{Kind: "KollectTarget", Namespace: "default", Name: "t"}
	tgt := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	rec := &exports{}
	inv := sys.Root.Spawn(inventory.Props(nil, nil, "window", nil, clk))
	sys.Root.Send(inv, &inventory.Configure{Config: &inventory.Config{ID: rows.Identity{Namespace: "default", Name: "inv"},
		Sources: []inventory.Source{{Ref: ref, PID: tgt}}, BatchWindow: time.Minute,
		Bindings: []sink.Config{{Inventory: "default/inv", Key: "event/rec", Type: "rec", BackendID: "rec", Backend: rec}}}})
	origin := &rows.Origin{TargetNamespace: "default", TargetName: "t", Version: "v1", Kind: "ConfigMap"}
	var rs []*rows.Row
	for _, name := range []string{"a", "b"} {
		r, err := rows.New(rows.Row{Origin: origin, Namespace: "ns", Name: name, UID: name}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	// Configured, the inventory arms its settling grace's end and its
	// first window (a new binding has a snapshot to offer). The clock may
	// step only then; the changes sent before the window ends are in the
	// mailbox ahead of its flush.
	eventually.True(t, 5*time.Second, "the inventory is configured", func() bool { return clk.Waiters() >= 2 })
	sys.Root.Send(inv, &messages.RowsChanged{Target: ref, Replace: true, Upserts: rs[:1]})
	sys.Root.Send(inv, &messages.RowsChanged{Target: ref, Upserts: rs[1:]})
	clk.Step(time.Minute - time.Millisecond)
	if got := rec.get(); len(got) != 0 {
		t.Fatalf("exported %v before the window ended", got)
	}
	clk.Step(time.Millisecond)
	if got := rec.waitExports(t, 1, 5*time.Second); got[0] != 2 {
		t.Fatalf("the window's export held %d rows, want both changes", got[0])
	}
}
