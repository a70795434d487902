package inventory

import (
	"sort"
	"strings"
	"testing"

	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/pipeline/rows"
)

func TestRowSet(t *testing.T) {
	ta := messages.TargetRef{Kind: "KollectTarget", Namespace: "team", Name: "a"}
	tb := messages.TargetRef{Kind: "KollectTarget", Namespace: "team", Name: "b"}
	row := func(target messages.TargetRef, name, image string) *rows.Row {
		r, err := rows.New(rows.Row{TargetNamespace: target.Namespace, TargetName: target.Name, Namespace: "apps", Name: name,
			Version: "v1", Kind: "Pod", UID: "uid-" + name, Attributes: map[string]any{"image": image}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	names := func(rs []*rows.Row) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.TargetName+":"+r.Name+"="+r.Attributes["image"].(string))
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
