package inventory_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks"
)

// failing is a backend whose exports fail: the export it was given is
// never acknowledged.
type failing struct{}

func (failing) Export(context.Context, *rows.Delta) (sinks.Ack, error) {
	return sinks.Ack{}, context.DeadlineExceeded
}

// A binding replaced before its export was acknowledged (its sink edited,
// its Secret rotated) hands nothing over: the binding that replaces it is
// offered the current rows at once, without waiting for a change.
func TestAReplacedBindingIsOfferedTheCurrentRows(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	ref := messages.TargetRef{Kind: "KollectTarget", Namespace: "team", Name: "a"}
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	inv := sys.Root.Spawn(inventory.Props(&lastReport{}, nil, "replaced", nil))
	configure := func(b sinks.Backend) {
		sys.Root.Send(inv, &inventory.Configure{Config: &inventory.Config{ID: rows.Identity{Namespace: "team", Name: "inv"},
			Targets: []inventory.Target{{Ref: ref, PID: pid}}, BatchWindow: 10 * time.Millisecond,
			Bindings: []sink.Config{{Inventory: "team/inv", Key: "snapshot/store", Type: "rec", Backend: b}}}})
	}
	configure(failing{})
	r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "team", TargetName: "a", Version: "v1", Kind: "ConfigMap"}, Namespace: "team", Name: "a1", UID: "a1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sys.Root.Send(inv, &messages.RowsChanged{Target: ref, Replace: true, Upserts: []*rows.Row{r}})
	time.Sleep(200 * time.Millisecond) // the first binding tries, and fails

	rec := &deltas{}
	configure(rec) // the sink edited: a new backend, no change to the rows
	if got := rec.wait(t, 1)[0]; !slices.Equal(got.next, []string{"a1"}) {
		t.Fatalf("the new binding's first export holds %v", got.next)
	}
}
