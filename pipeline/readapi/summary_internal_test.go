package readapi

import (
	"encoding/json"
	"net/url"
	"slices"
	"testing"
	"time"

	"kollect.dev/kollect/model/rows"
)

func row(t *testing.T, target, ns, name, kind string) *rows.Row {
	t.Helper()
	r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: ns, TargetName: target, Version: "v1", Kind: kind},
		Namespace: ns, Name: name, UID: ns + "-" + name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func state(ns, name string, rs ...*rows.Row) *State {
	return &State{Ref: Ref{Namespace: ns, Name: name}, Snapshot: rows.NewSnapshot(rows.Identity{Namespace: ns, Name: name}, rs, time.Unix(0, 0)), Updated: time.Unix(1, 0)}
}

func TestSummarizeFiltersPagesAndCountsEachRowOnce(t *testing.T) {
	a1, a2 := row(t, "cms", "a", "a1", "ConfigMap"), row(t, "secrets", "a", "a2", "Secret")
	b1 := row(t, "cms", "b", "b1", "ConfigMap")
	// Two inventories of namespace a export the same rows.
	states := []*State{state("a", "main", a1, a2), state("a", "mirror", a1, a2), state("b", "main", b1), {Ref: Ref{Namespace: "c", Name: "unbuilt"}}}
	for _, tc := range []struct {
		query       string
		want        []string
		total       int
		hasMore     bool
		badArgument bool
	}{
		{query: "", want: []string{"a1", "a2", "b1"}, total: 3},
		{query: "namespace=a", want: []string{"a1", "a2"}, total: 2},
		{query: "inventory=mirror", want: []string{"a1", "a2"}, total: 2},
		{query: "kind=ConfigMap", want: []string{"a1", "b1"}, total: 2},
		{query: "target=secrets", want: []string{"a2"}, total: 1},
		{query: "name=b1&version=v1", want: []string{"b1"}, total: 1},
		{query: "group=apps", want: nil, total: 0},
		{query: "cluster=elsewhere", want: nil, total: 0},
		{query: "limit=1", want: []string{"a1"}, total: 3, hasMore: true},
		{query: "limit=2&offset=2", want: []string{"b1"}, total: 3},
		{query: "offset=9", want: nil, total: 3},
		{query: "limit=9999", want: []string{"a1", "a2", "b1"}, total: 3},
		{query: "limit=0", badArgument: true},
		{query: "offset=x", badArgument: true},
	} {
		q, _ := url.ParseQuery(tc.query)
		f, err := parseFilter(q)
		if (err != nil) != tc.badArgument {
			t.Errorf("%q: error %v", tc.query, err)
			continue
		}
		if tc.badArgument {
			continue
		}
		s := summarize(states, f)
		var got []string
		for _, item := range s.Items {
			var r struct{ Name string }
			if err := json.Unmarshal(item, &r); err != nil {
				t.Fatal(err)
			}
			got = append(got, r.Name)
		}
		if !slices.Equal(got, tc.want) || s.ItemCount != len(tc.want) || s.Pagination.Total != tc.total || s.Pagination.HasMore != tc.hasMore {
			t.Errorf("%q: rows %v (count %d), %+v; want %v, total %d, more %t", tc.query, got, s.ItemCount, *s.Pagination, tc.want, tc.total, tc.hasMore)
		}
		if f.Limit > maxLimit {
			t.Errorf("%q: limit %d above %d", tc.query, f.Limit, maxLimit)
		}
	}
}

// Every route the server answers is in the OpenAPI document, and the
// document names no route the server does not answer.
func TestTheOpenAPIDocumentNamesEveryRoute(t *testing.T) {
	var doc struct {
		Paths map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for p := range doc.Paths {
		documented = append(documented, p)
	}
	slices.Sort(documented)
	routes := slices.Sorted(slices.Values(Routes))
	if !slices.Equal(documented, routes) {
		t.Errorf("documented %v, served %v", documented, routes)
	}
}

// A watcher that reads late sees each changed inventory once, in order.
func TestAWatcherFoldsChangesPerInventory(t *testing.T) {
	s := NewStore(nil, "")
	w, stop := s.Watch()
	defer stop()
	for _, ref := range []Ref{{Namespace: "b", Name: "x"}, {Namespace: "a", Name: "x"}, {Namespace: "b", Name: "x"}} {
		w.notify(ref)
	}
	<-w.Changed()
	if got := w.Take(); !slices.Equal(got, []Ref{{Namespace: "a", Name: "x"}, {Namespace: "b", Name: "x"}}) {
		t.Errorf("took %v", got)
	}
	if got := w.Take(); len(got) != 0 {
		t.Errorf("took %v again", got)
	}
}
