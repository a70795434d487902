package inventory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/model/rows"
)

func TestRowSet(t *testing.T) {
	ta := messages.TargetRef{Kind: "KollectTarget", Namespace: "team", Name: "a"}
	tb := messages.TargetRef{Kind: "KollectTarget", Namespace: "team", Name: "b"}
	// A cluster target named like ta gives rows of objects in ta's
	// namespace ta's keys.
	cluster := messages.TargetRef{Kind: "KollectClusterTarget", Name: "a"}
	row := func(target messages.TargetRef, name, image string) *rows.Row {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: target.Namespace, TargetName: target.Name, Version: "v1", Kind: "Pod"}, Namespace: "apps", Name: name, UID: "uid-" + name}, rows.AttributesOf(map[string]any{"image": image}))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	names := func(rs []*rows.Row) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.TargetName+":"+r.Name+"="+r.Attributes().Get("image").(string))
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	type step struct {
		msg     *messages.RowsChanged
		drop    *messages.TargetRef
		changed bool
	}
	cases := []struct {
		name   string
		steps  []step
		dedupe bool
		want   string
	}{
		{"replace then upsert", []step{
			{msg: &messages.RowsChanged{Target: ta, Replace: true, Upserts: []*rows.Row{row(ta, "x", "1"), row(ta, "y", "1")}}, changed: true},
			{msg: &messages.RowsChanged{Target: ta, Upserts: []*rows.Row{row(ta, "x", "2")}}, changed: true},
		}, false, "a:x=2,a:y=1"},
		{"an identical upsert changes nothing", []step{
			{msg: &messages.RowsChanged{Target: ta, Upserts: []*rows.Row{row(ta, "x", "1")}}, changed: true},
			{msg: &messages.RowsChanged{Target: ta, Upserts: []*rows.Row{row(ta, "x", "1")}}, changed: false},
		}, false, "a:x=1"},
		{"delete", []step{
			{msg: &messages.RowsChanged{Target: ta, Upserts: []*rows.Row{row(ta, "x", "1"), row(ta, "y", "1")}}, changed: true},
			{msg: &messages.RowsChanged{Target: ta, Deletes: []rows.Key{row(ta, "y", "").Key()}}, changed: true},
		}, false, "a:x=1"},
		{"replace drops rows the target no longer has", []step{
			{msg: &messages.RowsChanged{Target: ta, Upserts: []*rows.Row{row(ta, "x", "1"), row(ta, "y", "1")}}, changed: true},
			{msg: &messages.RowsChanged{Target: ta, Replace: true, Upserts: []*rows.Row{row(ta, "y", "1")}}, changed: true},
		}, false, "a:y=1"},
		{"two targets collecting one object give two rows", []step{
			{msg: &messages.RowsChanged{Target: ta, Upserts: []*rows.Row{row(ta, "x", "1")}}, changed: true},
			{msg: &messages.RowsChanged{Target: tb, Upserts: []*rows.Row{row(tb, "x", "1")}}, changed: true},
		}, false, "a:x=1,b:x=1"},
		{"byResourceUID keeps one row per object", []step{
			{msg: &messages.RowsChanged{Target: tb, Upserts: []*rows.Row{row(tb, "x", "1")}}, changed: true},
			{msg: &messages.RowsChanged{Target: ta, Upserts: []*rows.Row{row(ta, "x", "1")}}, changed: true},
		}, true, "a:x=1"},
		{"a row sent under the same key by another target is that target's to delete", []step{
			{msg: &messages.RowsChanged{Target: ta, Upserts: []*rows.Row{row(ta, "x", "1")}}, changed: true},
			{msg: &messages.RowsChanged{Target: cluster, Upserts: []*rows.Row{row(ta, "x", "2")}}, changed: true},
			{msg: &messages.RowsChanged{Target: ta, Deletes: []rows.Key{row(ta, "x", "").Key()}}, changed: false},
			{msg: &messages.RowsChanged{Target: ta, Replace: true}, changed: false},
			{drop: &ta, changed: false},
		}, false, "a:x=2"},
		{"a target that goes leaves a shared key to the other holder", []step{
			{msg: &messages.RowsChanged{Target: ta, Upserts: []*rows.Row{row(ta, "x", "1")}}, changed: true},
			{msg: &messages.RowsChanged{Target: cluster, Upserts: []*rows.Row{row(ta, "x", "2")}}, changed: true},
			{drop: &cluster, changed: true},
		}, false, "a:x=1"},
		{"the row shown at a shared key does not depend on arrival order", []step{
			{msg: &messages.RowsChanged{Target: cluster, Upserts: []*rows.Row{row(ta, "x", "2")}}, changed: true},
			{msg: &messages.RowsChanged{Target: ta, Upserts: []*rows.Row{row(ta, "x", "1")}}, changed: false},
			{msg: &messages.RowsChanged{Target: ta, Upserts: []*rows.Row{row(ta, "x", "3")}}, changed: false},
		}, false, "a:x=2"},
		{"a shared key goes with its last holder", []step{
			{msg: &messages.RowsChanged{Target: ta, Upserts: []*rows.Row{row(ta, "x", "1")}}, changed: true},
			{msg: &messages.RowsChanged{Target: cluster, Upserts: []*rows.Row{row(ta, "x", "2")}}, changed: true},
			{msg: &messages.RowsChanged{Target: cluster, Deletes: []rows.Key{row(ta, "x", "").Key()}}, changed: true},
			{msg: &messages.RowsChanged{Target: ta, Replace: true}, changed: true},
		}, false, ""},
		{"a target that goes away takes its rows", []step{
			{msg: &messages.RowsChanged{Target: ta, Upserts: []*rows.Row{row(ta, "x", "1")}}, changed: true},
			{msg: &messages.RowsChanged{Target: tb, Upserts: []*rows.Row{row(tb, "z", "1")}}, changed: true},
			{drop: &ta, changed: true},
		}, false, "b:z=1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newRowSet()
			for i, st := range tc.steps {
				var changed bool
				if st.drop != nil {
					changed = s.drop(*st.drop)
				} else {
					changed = s.apply(st.msg)
				}
				if changed != st.changed {
					t.Fatalf("step %d: want changed=%v, got %v", i, st.changed, changed)
				}
			}
			if got := names(s.list(tc.dedupe)); got != tc.want {
				t.Fatalf("want %s, got %s", tc.want, got)
			}
		})
	}
}

// TestListStaysInCanonicalOrder: after any mix of upserts, deletes,
// replaces and drops, the incrementally ordered list equals every current
// row sorted from scratch.
func TestListStaysInCanonicalOrder(t *testing.T) {
	targets := []messages.TargetRef{{Kind: "KollectTarget", Namespace: "a", Name: "x"}, {Kind: "KollectTarget", Namespace: "b", Name: "y"}}
	rng := rand.New(rand.NewPCG(1, 2))
	// Rows change content, version or name (another place in the order
	// under the same key), and a row value sent earlier is sometimes sent
	// again (a target's complete list resends the rows it holds).
	sent := map[messages.TargetRef][]*rows.Row{}
	row := func(target messages.TargetRef, i, v int) *rows.Row {
		if old := sent[target]; len(old) > 0 && rng.IntN(5) == 0 {
			return old[rng.IntN(len(old))]
		}
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: target.Namespace, TargetName: target.Name, Version: fmt.Sprintf("v%d", 1+rng.IntN(2)), Kind: "Pod"}, Namespace: fmt.Sprintf("ns-%d", i%7),
			Name: fmt.Sprintf("%s-%03d", []string{"obj", "alt"}[rng.IntN(2)], i), UID: fmt.Sprintf("uid-%03d", i)}, rows.AttributesOf(map[string]any{"v": int64(v)}))
		if err != nil {
			t.Fatal(err)
		}
		sent[target] = append(sent[target], r)
		return r
	}
	s := newRowSet()
	for step := range 2000 {
		tg := targets[rng.IntN(len(targets))]
		msg := &messages.RowsChanged{Target: tg, Replace: rng.IntN(40) == 0}
		for range rng.IntN(20) {
			msg.Upserts = append(msg.Upserts, row(tg, rng.IntN(200), rng.IntN(3)))
		}
		for range rng.IntN(10) {
			msg.Deletes = append(msg.Deletes, rows.Key{TargetNamespace: tg.Namespace, TargetName: tg.Name, UID: fmt.Sprintf("uid-%03d", rng.IntN(200))})
		}
		if rng.IntN(60) == 0 {
			s.drop(tg)
		} else {
			s.apply(msg)
		}
		if rng.IntN(3) > 0 {
			continue // several changes between two exports
		}
		got := s.list(false)
		want := make([]*rows.Row, 0, s.len())
		s.rows.each(func(_ rows.Key, h held) { want = append(want, h.row) })
		slices.SortFunc(want, rows.Compare)
		if s.len() != len(want) {
			t.Fatalf("step %d: the index counts %d rows and holds %d", step, s.len(), len(want))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: list has %d rows out of order or stale; want %d", step, len(got), len(want))
		}
	}
}

// An inventory that does not list (nothing to export to, a target still
// missing) records no more changes than three quarters of its rows: past
// that the next list sorts everything anyway.
func TestChangesRecordedBetweenListsAreBounded(t *testing.T) {
	tg := messages.TargetRef{Kind: "KollectTarget", Namespace: "a", Name: "x"}
	s := newRowSet()
	upsert := func(i, v int) {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "a", TargetName: "x", Version: "v1", Kind: "Pod"},
			Namespace: "ns", Name: fmt.Sprintf("obj-%04d", i), UID: fmt.Sprintf("uid-%04d", i)}, rows.AttributesOf(map[string]any{"v": int64(v)}))
		if err != nil {
			t.Fatal(err)
		}
		s.apply(&messages.RowsChanged{Target: tg, Upserts: []*rows.Row{r}})
	}
	for i := range 1000 {
		upsert(i, 0)
	}
	if got := s.list(false); len(got) != 1000 {
		t.Fatalf("listed %d rows", len(got))
	}
	for v := range 50 { // 50,000 changes of 1,000 rows, never listed
		for i := range 1000 {
			upsert(i, v+1)
		}
		if n := len(s.left) + len(s.came); n > 1000*3/4+64 {
			t.Fatalf("%d changes recorded for 1,000 rows", n)
		}
	}
	got := s.list(false)
	if len(got) != 1000 || !slices.IsSortedFunc(got, rows.Compare) {
		t.Fatalf("listed %d rows, sorted %v", len(got), slices.IsSortedFunc(got, rows.Compare))
	}
	for _, r := range got {
		if v, _ := r.Attributes().Lookup("v"); v != int64(50) {
			t.Fatalf("%s holds v=%v, want the last value 50", r.Name, v)
		}
	}
}

// BenchmarkList: a list after changes to a fraction of 100,000 listed
// rows (updates of rows held, or as many new rows), sorted from scratch
// and merged into the last list's order.
func BenchmarkList(b *testing.B) {
	const n = 100_000
	tg := messages.TargetRef{Kind: "KollectTarget", Namespace: "a", Name: "x"}
	origin := &rows.Origin{TargetNamespace: "a", TargetName: "x", Version: "v1", Kind: "ConfigMap"}
	mk := func(i, v int) *rows.Row {
		r, err := rows.New(rows.Row{Origin: origin, Namespace: fmt.Sprintf("team-%02d", i%20), Name: fmt.Sprintf("cm-%07d", i*7919%(4*n)),
			UID: fmt.Sprintf("uid-%07d", i)}, rows.Attributes{{Name: "v", Value: int64(v)}})
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	base := make([]*rows.Row, n)
	for i := range base {
		base[i] = mk(i, 0)
	}
	for _, kind := range []string{"updates", "creates"} {
		for _, frac := range []float64{0.1, 0.3, 0.5, 1} {
			m := int(frac * n)
			changes := make([]*rows.Row, m)
			for i := range changes {
				if kind == "updates" {
					changes[i] = mk(i*int(1/frac)%n, 1)
				} else {
					changes[i] = mk(n+i, 0)
				}
			}
			for _, path := range []string{"sortAll", "merged"} {
				b.Run(fmt.Sprintf("%s %.0f%% %s", kind, frac*100, path), func(b *testing.B) {
					for b.Loop() {
						b.StopTimer()
						s := newRowSet()
						s.apply(&messages.RowsChanged{Target: tg, Upserts: base, Replace: true})
						s.list(false)
						for lo := 0; lo < m; lo += 8192 {
							s.apply(&messages.RowsChanged{Target: tg, Upserts: changes[lo:min(lo+8192, m)]})
						}
						if path == "merged" && s.sorted == nil {
							b.Skip("more changes than a rowSet records: it sorts from scratch")
						}
						b.StartTimer()
						var got []*rows.Row
						if path == "sortAll" {
							got = s.sortAll()
						} else {
							got = s.merged()
						}
						if len(got) != s.len() {
							b.Fatalf("listed %d of %d rows", len(got), s.len())
						}
					}
				})
			}
		}
	}
}
