package inventory_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks"
)

// deltas records what each export asked the sink to change.
type deltas struct {
	mu  sync.Mutex
	got []change
}

type change struct{ next, upserts, deletes []string }

func names(rs []*rows.Row) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Name)
	}
	slices.Sort(out)
	return out
}

func (d *deltas) Export(_ context.Context, dl *rows.Delta) (sinks.Ack, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, change{names(dl.Next.Rows), names(dl.Upserts), names(dl.Deletes)})
	return sinks.Ack{Rows: len(dl.Next.Rows)}, nil
}

func (d *deltas) wait(t *testing.T, n int) []change {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d.mu.Lock()
		got := slices.Clone(d.got)
		d.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d exports within 5s, want %d: %+v", len(got), n, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type lastReport struct {
	mu  sync.Mutex
	rep inventory.Report
}

func (l *lastReport) InventoryReport(r inventory.Report) { l.mu.Lock(); l.rep = r; l.mu.Unlock() }
func (l *lastReport) get() inventory.Report              { l.mu.Lock(); defer l.mu.Unlock(); return l.rep }

// A target that cannot list (a typo in its profile, a scope that denies
// it, an actor that restarts) holds only itself: the targets that listed
// go on being exported, and what the sink holds of the one that has not is
// neither rewritten nor deleted.
func TestATargetThatHasNotListedHoldsOnlyItsOwnRows(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	silent := func() *actor.PID { return sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {})) }
	a := messages.TargetRef{Kind: "KollectTarget", Namespace: "team", Name: "a"}
	b := messages.TargetRef{Kind: "KollectTarget", Namespace: "team", Name: "b"}
	typo := messages.TargetRef{Kind: "KollectClusterTarget", Name: "typo"}
	pa, pb := silent(), silent()
	rec, reports := &deltas{}, &lastReport{}
	inv := sys.Root.Spawn(inventory.Props(reports, nil, "holding", nil))
	configure := func(targets []inventory.Target, missing ...messages.TargetRef) {
		sys.Root.Send(inv, &inventory.Configure{Config: &inventory.Config{ID: rows.Identity{Namespace: "team", Name: "inv"},
			Targets: targets, Missing: missing, BatchWindow: 10 * time.Millisecond,
			Bindings: []sink.Config{{Inventory: "team/inv", Key: "database/rec", Type: "rec", Backend: rec}}}})
	}
	row := func(from messages.TargetRef, name string) *rows.Row {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "team", TargetName: from.Name, Version: "v1", Kind: "ConfigMap"}, Namespace: "team", Name: name, UID: name}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	configure([]inventory.Target{{Ref: a, PID: pa}, {Ref: b, PID: pb}})
	sys.Root.Send(inv, &messages.RowsChanged{Target: a, Replace: true, Upserts: []*rows.Row{row(a, "a1"), row(a, "a2")}})
	sys.Root.Send(inv, &messages.RowsChanged{Target: b, Replace: true, Upserts: []*rows.Row{row(b, "b1")}})
	if got := rec.wait(t, 1)[0]; !slices.Equal(got.next, []string{"a1", "a2", "b1"}) {
		t.Fatalf("first export holds %v", got.next)
	}

	// A cluster target with a typo joins (missing: it never ran), and b's
	// actor is replaced (it lists again, later).
	configure([]inventory.Target{{Ref: a, PID: pa}, {Ref: b, PID: silent()}}, typo)
	sys.Root.Send(inv, &messages.RowsChanged{Target: a, Upserts: []*rows.Row{row(a, "a3")}, Deletes: []rows.Key{row(a, "a1").Key()}})
	got := rec.wait(t, 2)[1]
	want := change{next: []string{"a2", "a3", "b1"}, upserts: []string{"a3"}, deletes: []string{"a1"}}
	if !slices.Equal(got.next, want.next) || !slices.Equal(got.upserts, want.upserts) || !slices.Equal(got.deletes, want.deletes) {
		t.Fatalf("the export while b and typo had not listed was %+v, want %+v", got, want)
	}
	rep := reports.get()
	if !rep.Holding || !slices.Equal(rep.Waiting, []string{"KollectClusterTarget:/typo", "KollectTarget:team/b"}) {
		t.Fatalf("the report says holding=%v waiting=%v; want it to hold b and typo", rep.Holding, rep.Waiting)
	}

	// b lists again without b1: now, and only now, b1 goes.
	sys.Root.Send(inv, &messages.RowsChanged{Target: b, Replace: true, Upserts: []*rows.Row{row(b, "b2")}})
	got = rec.wait(t, 3)[2]
	if !slices.Equal(got.deletes, []string{"b1"}) || !slices.Equal(got.next, []string{"a2", "a3", "b2"}) {
		t.Fatalf("the export after b listed was %+v", got)
	}
}
