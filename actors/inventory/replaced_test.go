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
	"kollect.dev/kollect/model/rows"
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
	inv := sys.Root.Spawn(inventory.Props(&lastReport{}, nil, "replaced", nil, nil))
	configure := func(id string, b sinks.Backend) {
		sys.Root.Send(inv, &inventory.Configure{Config: &inventory.Config{ID: rows.Identity{Namespace: "team", Name: "inv"},
			Sources: []inventory.Source{{Ref: ref, PID: pid}}, BatchWindow: 10 * time.Millisecond,
			Bindings: []sink.Config{{Inventory: "team/inv", Key: "snapshot/store", Type: "rec", BackendID: id, Backend: b}}}})
	}
	configure("failing", failing{})
	r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "team", TargetName: "a", Version: "v1", Kind: "ConfigMap"}, Namespace: "team", Name: "a1", UID: "a1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sys.Root.Send(inv, &messages.RowsChanged{Target: ref, Replace: true, Upserts: []*rows.Row{r}})
	time.Sleep(200 * time.Millisecond) // the first binding tries, and fails

	rec := &deltas{}
	configure("rec", rec) // the sink edited: a new backend, no change to the rows
	if got := rec.wait(t, 1)[0]; !slices.Equal(got.next, []string{"a1"}) {
		t.Fatalf("the new binding's first export holds %v", got.next)
	}
}

// byValue is a backend held by value with a map inside: comparing two of
// them panics, so the engine must tell backends apart by their ids.
type byValue struct {
	d    *deltas
	tags map[string]string
}

func (b byValue) Export(ctx context.Context, d *rows.Delta) (sinks.Ack, error) {
	return b.d.Export(ctx, d)
}

// A binding keeps its actor while its backend's id stands, whatever the
// backend holds, and is replaced (offered the rows again) when the id
// changes.
func TestABindingIsKeptByItsBackendsID(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	ref := messages.TargetRef{Kind: "KollectTarget", Namespace: "team", Name: "a"}
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	inv := sys.Root.Spawn(inventory.Props(&lastReport{}, nil, "by-id", nil, nil))
	rec := &deltas{}
	configure := func(id string) {
		b := byValue{d: rec, tags: map[string]string{"id": id}}
		sys.Root.Send(inv, &inventory.Configure{Config: &inventory.Config{ID: rows.Identity{Namespace: "team", Name: "inv"},
			Sources: []inventory.Source{{Ref: ref, PID: pid}}, BatchWindow: 10 * time.Millisecond,
			Bindings: []sink.Config{{Inventory: "team/inv", Key: "snapshot/store", Type: "rec", BackendID: id, Backend: b}}}})
	}
	configure("1")
	r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "team", TargetName: "a", Version: "v1", Kind: "ConfigMap"}, Namespace: "team", Name: "a1", UID: "a1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sys.Root.Send(inv, &messages.RowsChanged{Target: ref, Replace: true, Upserts: []*rows.Row{r}})
	rec.wait(t, 1)
	configure("1") // the same backend again: nothing to export
	time.Sleep(300 * time.Millisecond)
	if n := rec.count(); n != 1 {
		t.Fatalf("the binding was replaced though its backend's id stood: %d exports", n)
	}
	configure("2") // rebuilt: the new binding is offered the rows
	if got := rec.wait(t, 2)[1]; !slices.Equal(got.next, []string{"a1"}) {
		t.Fatalf("the replacing binding's first export holds %v", got.next)
	}
}
