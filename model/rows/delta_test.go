package rows_test

import (
	"slices"
	"testing"
	"time"

	"kollect.dev/kollect/model/rows"
)

func row(t *testing.T, target, name, uid, image string) *rows.Row {
	t.Helper()
	r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: target, Version: "v1", Kind: "ConfigMap"}, Namespace: "demo", Name: name, UID: uid}, rows.AttributesOf(map[string]any{"image": image}))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func names(rs []*rows.Row) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.TargetName+"/"+r.Name)
	}
	return out
}

func TestDiff(t *testing.T) {
	a1, b1, c1 := row(t, "t", "a", "1", "x"), row(t, "t", "b", "2", "x"), row(t, "t", "c", "3", "x")
	a2 := row(t, "t", "a", "1", "y")         // same key, new content
	a1copy := row(t, "t", "a", "1", "x")     // same content, another pointer
	aOther := row(t, "other", "a", "1", "x") // same object, another target
	snap := func(rs ...*rows.Row) *rows.Snapshot {
		return rows.NewSnapshot(rows.Identity{Namespace: "default", Name: "inv"}, slices.Clone(rs), time.Unix(0, 0))
	}
	byHand := func(rs ...*rows.Row) *rows.Snapshot { return &rows.Snapshot{Rows: rs} } // in no particular order
	for _, tc := range []struct {
		name             string
		prev, next       *rows.Snapshot
		upserts, deletes []string
		replaced, full   bool
	}{
		{name: "unknown previous state sends everything", next: snap(a1, b1), upserts: []string{"t/a", "t/b"}, full: true},
		{name: "nothing changed", prev: snap(a1, b1), next: snap(a1, b1)},
		{name: "equal content in another row value is unchanged", prev: snap(a1, b1), next: snap(a1copy, b1)},
		{name: "changed content is an upsert replacing the old row", prev: snap(a1, b1), next: snap(a2, b1), upserts: []string{"t/a"}, replaced: true},
		{name: "a new row", prev: snap(a1), next: snap(a1, c1), upserts: []string{"t/c"}},
		{name: "a missing row is a delete", prev: snap(a1, b1, c1), next: snap(a1, c1), deletes: []string{"t/b"}},
		{name: "everything deleted", prev: snap(a1, b1), next: snap(), deletes: []string{"t/a", "t/b"}},
		{name: "the same object under another target is another row", prev: snap(a1), next: snap(aOther), upserts: []string{"other/a"}, deletes: []string{"t/a"}},
		{name: "snapshots built by hand, out of order", prev: byHand(c1, b1, a1), next: byHand(a2, c1), upserts: []string{"t/a"}, deletes: []string{"t/b"}, replaced: true},
		{name: "snapshots built by hand, in two orders", prev: byHand(b1, a1), next: byHand(a1, b1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := rows.Diff(tc.prev, tc.next)
			if got := names(d.Upserts); !slices.Equal(got, append([]string{}, tc.upserts...)) {
				t.Errorf("upserts %v, want %v", got, tc.upserts)
			}
			if got := names(d.Deletes); !slices.Equal(got, append([]string{}, tc.deletes...)) {
				t.Errorf("deletes %v, want %v", got, tc.deletes)
			}
			if d.Full() != tc.full || len(d.Replaced) != len(d.Upserts) {
				t.Errorf("full %v, %d replaced for %d upserts", d.Full(), len(d.Replaced), len(d.Upserts))
			}
			if tc.replaced && (d.Replaced[0] == nil || d.Replaced[0].Sum() == d.Upserts[0].Sum()) {
				t.Errorf("upsert does not name the row it replaces")
			}
			if d.Empty() != (len(tc.upserts)+len(tc.deletes) == 0) {
				t.Errorf("Empty() = %v", d.Empty())
			}
		})
	}
}

// A partial snapshot (one that keeps targets' rows as the backend holds
// them) on either side makes the delta full: neither side says what the
// backend holds of the kept targets.
func TestAPartialSnapshotMakesTheDeltaFull(t *testing.T) {
	id := rows.Identity{Namespace: "default", Name: "inv"}
	a, b := row(t, "t", "a", "1", "x"), row(t, "t", "b", "2", "x")
	complete := rows.NewSnapshot(id, []*rows.Row{a, b}, time.Now())
	partial := rows.NewSnapshot(id, []*rows.Row{a}, time.Now()).Keeping([]string{"held", "broken", "held"})
	if !slices.Equal(partial.Keep, []string{"broken", "held"}) || !partial.Keeps("held") || partial.Keeps("t") || complete.Keeps("held") {
		t.Fatalf("keep %v: Keeps(held)=%v Keeps(t)=%v", partial.Keep, partial.Keeps("held"), partial.Keeps("t"))
	}
	if complete.Keeping(nil) != complete || complete.Partial() || !partial.Partial() {
		t.Fatal("Keeping(nil) must return the snapshot itself, complete")
	}
	for _, c := range []struct {
		name       string
		prev, next *rows.Snapshot
		full       bool
	}{
		{"complete to complete", complete, complete, false},
		{"complete to partial", complete, partial, true},
		{"partial to complete", partial, complete, true},
		{"partial to partial", partial, partial, true},
	} {
		d := rows.Diff(c.prev, c.next)
		if d.Full() != c.full {
			t.Errorf("%s: full=%v, want %v", c.name, d.Full(), c.full)
		}
		if c.full && len(d.Upserts) != len(c.next.Rows) {
			t.Errorf("%s: a full delta upserts %d rows, want every row of next (%d)", c.name, len(d.Upserts), len(c.next.Rows))
		}
	}
}
