package inventory_test

import (
	"context"
	"fmt"
	"slices"
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

// deltas records what each export asked the sink to change.
type deltas struct {
	mu  sync.Mutex
	got []change
}

type change struct {
	next, upserts, deletes []string
	keep                   []string // the targets a partial snapshot keeps
	full                   bool
}

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
	d.got = append(d.got, change{names(dl.Next.Rows), names(dl.Upserts), names(dl.Deletes), dl.Next.Keep, dl.Full()})
	return sinks.Ack{Rows: len(dl.Next.Rows)}, nil
}

func (d *deltas) wait(t *testing.T, n int) []change {
	t.Helper()
	var got []change
	eventually.Check(t, 5*time.Second, fmt.Sprintf("%d exports", n), func() error {
		d.mu.Lock()
		got = slices.Clone(d.got)
		d.mu.Unlock()
		if len(got) < n {
			return fmt.Errorf("%d so far: %+v", len(got), got)
		}
		return nil
	})
	return got
}

// keeper is a backend that can keep targets' rows (a database).
type keeper struct{ deltas }

func (*keeper) KeepsTargets() bool { return true }

func (d *deltas) count() int { d.mu.Lock(); defer d.mu.Unlock(); return len(d.got) }

type lastReport struct {
	mu  sync.Mutex
	rep inventory.Report
}

func (l *lastReport) InventoryReport(r inventory.Report) { l.mu.Lock(); l.rep = r; l.mu.Unlock() }
func (l *lastReport) get() inventory.Report              { l.mu.Lock(); defer l.mu.Unlock(); return l.rep }

// await waits up to 5 s for a report ok accepts and returns it.
func (l *lastReport) await(t *testing.T, what string, ok func(inventory.Report) bool) inventory.Report {
	t.Helper()
	var rep inventory.Report
	eventually.Check(t, 5*time.Second, what, func() error {
		if rep = l.get(); !ok(rep) {
			return fmt.Errorf("last report %+v", rep)
		}
		return nil
	})
	return rep
}

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
	inv := sys.Root.Spawn(inventory.Props(reports, nil, "holding", nil, nil))
	configure := func(targets []inventory.Source, missing ...messages.TargetRef) {
		sys.Root.Send(inv, &inventory.Configure{Config: &inventory.Config{ID: rows.Identity{Namespace: "team", Name: "inv"},
			Sources: targets, Missing: missing, BatchWindow: 10 * time.Millisecond,
			Bindings: []sink.Config{{Inventory: "team/inv", Key: "database/rec", Type: "rec", BackendID: "holding_test", Backend: rec}}}})
	}
	row := func(from messages.TargetRef, name string) *rows.Row {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "team", TargetName: from.Name, Version: "v1", Kind: "ConfigMap"}, Namespace: "team", Name: name, UID: name}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	configure([]inventory.Source{{Ref: a, PID: pa}, {Ref: b, PID: pb}})
	sys.Root.Send(inv, &messages.RowsChanged{Target: a, Replace: true, Upserts: []*rows.Row{row(a, "a1"), row(a, "a2")}})
	sys.Root.Send(inv, &messages.RowsChanged{Target: b, Replace: true, Upserts: []*rows.Row{row(b, "b1")}})
	if got := rec.wait(t, 1)[0]; !slices.Equal(got.next, []string{"a1", "a2", "b1"}) {
		t.Fatalf("first export holds %v", got.next)
	}

	// A cluster target with a typo joins (missing: it never ran), and b's
	// actor is replaced (it lists again, later).
	configure([]inventory.Source{{Ref: a, PID: pa}, {Ref: b, PID: silent()}}, typo)
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

// After a restart nothing has been acknowledged to carry a target's rows
// over from: a target that cannot list then (a profile typo, a scope that
// denies it) still holds only itself. A sink that can keep its rows apart
// gets the others' rows in a partial snapshot and keeps what it holds of
// the held target; one that cannot (a document) waits, and says so; once
// the target lists, both reconcile in full.
func TestAfterARestartATargetThatHasNotListedHoldsOnlyItself(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	silent := func() *actor.PID { return sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {})) }
	a := messages.TargetRef{Kind: "KollectTarget", Namespace: "team", Name: "a"}
	typo := messages.TargetRef{Kind: "KollectTarget", Namespace: "team", Name: "typo"}
	db, doc, reports := &keeper{}, &deltas{}, &lastReport{}
	inv := sys.Root.Spawn(inventory.Props(reports, nil, "restart", nil, nil))
	configure := func(targets []inventory.Source, missing ...messages.TargetRef) {
		sys.Root.Send(inv, &inventory.Configure{Config: &inventory.Config{ID: rows.Identity{Namespace: "team", Name: "inv"},
			Sources: targets, Missing: missing, BatchWindow: 10 * time.Millisecond,
			Bindings: []sink.Config{{Inventory: "team/inv", Key: "database/db", Type: "db", BackendID: "db", Backend: db},
				{Inventory: "team/inv", Key: "snapshot/doc", Type: "doc", BackendID: "doc", Backend: doc}}}})
	}
	row := func(from messages.TargetRef, name string) *rows.Row {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "team", TargetName: from.Name, Version: "v1", Kind: "ConfigMap"}, Namespace: "team", Name: name, UID: name}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	pa := silent()
	configure([]inventory.Source{{Ref: a, PID: pa}}, typo)
	sys.Root.Send(inv, &messages.RowsChanged{Target: a, Replace: true, Upserts: []*rows.Row{row(a, "a1"), row(a, "a2")}})
	got := db.wait(t, 1)[0]
	if !got.full || !slices.Equal(got.next, []string{"a1", "a2"}) || !slices.Equal(got.keep, []string{"typo"}) {
		t.Fatalf("the database's first export after the restart was %+v, want a full export of a's rows keeping typo's", got)
	}
	// Its acknowledgement says it was partial: the count is a's rows only.
	acked := reports.await(t, "an acknowledgement", func(r inventory.Report) bool {
		return len(r.Bindings) > 0 && !r.Bindings[0].LastExport.IsZero()
	})
	if b := acked.Bindings[0]; !b.Partial || b.Exported != 2 {
		t.Fatalf("the partial export's acknowledgement is reported as %+v", b)
	}
	sys.Root.Send(inv, &messages.RowsChanged{Target: a, Upserts: []*rows.Row{row(a, "a3")}})
	if got := db.wait(t, 2)[1]; !got.full || !slices.Equal(got.next, []string{"a1", "a2", "a3"}) || !slices.Equal(got.keep, []string{"typo"}) {
		t.Fatalf("a's next change went out as %+v", got)
	}
	if n := doc.count(); n != 0 {
		t.Fatalf("the document sink exported %d times while it could not keep typo's rows", n)
	}
	rep := reports.get()
	waits := map[string]bool{}
	for _, b := range rep.Bindings {
		waits[b.Key] = b.Waits
	}
	if !rep.Holding || !waits["snapshot/doc"] || waits["database/db"] {
		t.Fatalf("the report says holding=%v, waits=%v; want holding, with only the document sink waiting", rep.Holding, waits)
	}

	// typo is fixed and lists: both sinks reconcile in full, without it
	// kept, and the document sink says it no longer waits.
	configure([]inventory.Source{{Ref: a, PID: pa}, {Ref: typo, PID: silent()}})
	sys.Root.Send(inv, &messages.RowsChanged{Target: typo, Replace: true, Upserts: []*rows.Row{row(typo, "t1")}})
	want := []string{"a1", "a2", "a3", "t1"}
	if got := db.wait(t, 3)[2]; !got.full || got.keep != nil || !slices.Equal(got.next, want) {
		t.Fatalf("the database's export once typo listed was %+v, want a complete, full export", got)
	}
	if got := doc.wait(t, 1)[0]; !got.full || got.keep != nil || !slices.Equal(got.next, want) {
		t.Fatalf("the document sink's first export was %+v", got)
	}
	for _, b := range reports.get().Bindings {
		if b.Waits {
			t.Fatalf("binding %s still reports waiting once every target listed", b.Key)
		}
	}
}

// A started inventory whose target has not listed says it is settling,
// then, once the grace ends without the target listing, reports again
// without it: status says it waits for a target that cannot list. A
// target that lists in time is no news at all.
func TestAStartedInventorySettlesForAGrace(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	silent := func() *actor.PID { return sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {})) }
	a := messages.TargetRef{Kind: "KollectTarget", Namespace: "team", Name: "a"}
	reports := &lastReport{}
	inv := sys.Root.Spawn(inventory.Props(reports, nil, "settling", nil, nil))
	sys.Root.Send(inv, &inventory.Configure{Config: &inventory.Config{ID: rows.Identity{Namespace: "team", Name: "inv"},
		Sources: []inventory.Source{{Ref: a, PID: silent()}}, BatchWindow: 10 * time.Millisecond, SettleGrace: 300 * time.Millisecond,
		Bindings: []sink.Config{{Inventory: "team/inv", Key: "database/db", Type: "db", BackendID: "holding_test", Backend: &keeper{}}}}})
	if rep := reports.await(t, "a report while the target lists", func(r inventory.Report) bool { return len(r.Waiting) == 1 }); !rep.Settling {
		t.Fatalf("the first report does not say it is settling: %+v", rep)
	}
	reports.await(t, "a report once the grace ended", func(r inventory.Report) bool { return len(r.Waiting) == 1 && !r.Settling })
}

// A target that joins a started inventory, still within its grace, is
// news: its rows were never exported, so waiting for it is not settling.
func TestATargetThatJoinsIsNotSettling(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	silent := func() *actor.PID { return sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {})) }
	a := messages.TargetRef{Kind: "KollectTarget", Namespace: "team", Name: "a"}
	b := messages.TargetRef{Kind: "KollectTarget", Namespace: "team", Name: "b"}
	pa, reports := silent(), &lastReport{}
	inv := sys.Root.Spawn(inventory.Props(reports, nil, "joins", nil, nil))
	configure := func(targets ...inventory.Source) {
		sys.Root.Send(inv, &inventory.Configure{Config: &inventory.Config{ID: rows.Identity{Namespace: "team", Name: "inv"},
			Sources: targets, BatchWindow: 10 * time.Millisecond, SettleGrace: time.Hour,
			Bindings: []sink.Config{{Inventory: "team/inv", Key: "database/db", Type: "db", BackendID: "holding_test", Backend: &keeper{}}}}})
	}
	configure(inventory.Source{Ref: a, PID: pa})
	sys.Root.Send(inv, &messages.RowsChanged{Target: a, Replace: true})
	configure(inventory.Source{Ref: a, PID: pa}, inventory.Source{Ref: b, PID: silent()})
	rep := reports.await(t, "a report that waits for b", func(r inventory.Report) bool { return slices.Equal(r.Waiting, []string{"KollectTarget:team/b"}) })
	if rep.Settling {
		t.Fatalf("waiting for a target that joined is reported as settling: %+v", rep)
	}
}

// A target the operator refused to run (degraded before it ever ran, say
// its profile is gone) is waited for at once: its inventory does not
// settle for it.
func TestARefusedTargetIsNotSettling(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	broken := messages.TargetRef{Kind: "KollectTarget", Namespace: "team", Name: "broken"}
	reports := &lastReport{}
	inv := sys.Root.Spawn(inventory.Props(reports, nil, "refused", nil, nil))
	configure := func(refused ...messages.TargetRef) {
		sys.Root.Send(inv, &inventory.Configure{Config: &inventory.Config{ID: rows.Identity{Namespace: "team", Name: "inv"},
			Missing: []messages.TargetRef{broken}, Refused: refused, BatchWindow: 10 * time.Millisecond, SettleGrace: time.Hour,
			Bindings: []sink.Config{{Inventory: "team/inv", Key: "database/db", Type: "db", BackendID: "holding_test", Backend: &keeper{}}}}})
	}
	wait := func(settling bool) {
		t.Helper()
		reports.await(t, fmt.Sprintf("a report with settling %v", settling), func(r inventory.Report) bool { return len(r.Waiting) == 1 && r.Settling == settling })
	}
	configure()
	wait(true) // not started yet: it may still run
	configure(broken)
	wait(false)
}
