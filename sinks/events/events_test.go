package events_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks/events"
)

func row(t *testing.T, name, uid, image string) *rows.Row {
	t.Helper()
	r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: "shop", Group: "apps", Version: "v1", Kind: "Deployment"}, Namespace: "demo", Name: name, UID: uid}, rows.AttributesOf(map[string]any{"image": image}))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func snap(rs ...*rows.Row) *rows.Snapshot {
	return rows.NewSnapshot(rows.Identity{Namespace: "default", Name: "inv"}, slices.Clone(rs), time.Unix(0, 0))
}

func kinds(cs []events.Change) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Type+":"+c.Key)
	}
	return out
}

func TestPlan(t *testing.T) {
	scope := events.Scope{Cluster: "east", Inventory: rows.Identity{Namespace: "default", Name: "inv"}}
	a1, a2, b1 := row(t, "a", "1", "x"), row(t, "a", "1", "y"), row(t, "b", "2", "x")
	aNew := row(t, "a", "9", "x") // deleted and created again: new UID, same name
	ka, kb := scope.Key(a1), scope.Key(b1)
	if ka != "east/demo/apps/Deployment/a#default/inv/shop" {
		t.Fatalf("row key %q", ka)
	}
	for _, tc := range []struct {
		name      string
		prev      *rows.Snapshot
		next      *rows.Snapshot
		recovered events.State
		want      []string
	}{
		{name: "first export to an empty stream", next: snap(a1, b1), recovered: events.State{}, want: []string{"upsert:" + ka, "upsert:" + kb}},
		{name: "an update", prev: snap(a1, b1), next: snap(a2, b1), want: []string{"upsert:" + ka}},
		{name: "a delete comes before upserts", prev: snap(a1), next: snap(b1), want: []string{"delete:" + ka, "upsert:" + kb}},
		{name: "recreated object: delete then upsert of the same key", prev: snap(a1), next: snap(aNew), want: []string{"delete:" + ka, "upsert:" + ka}},
		{name: "after a restart only what differs from the stream", next: snap(a2, b1),
			recovered: events.State{ka: a1.Sum(), kb: b1.Sum()}, want: []string{"upsert:" + ka}},
		{name: "after a restart rows gone while down are deleted", next: snap(a1),
			recovered: events.State{ka: a1.Sum(), kb: b1.Sum()}, want: []string{"delete:" + kb}},
		{name: "after a restart nothing changed", next: snap(a1, b1), recovered: events.State{ka: a1.Sum(), kb: b1.Sum()}, want: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := events.Plan(scope, rows.Diff(tc.prev, tc.next), tc.recovered)
			if !slices.Equal(kinds(got), tc.want) {
				t.Fatalf("plan %v, want %v", kinds(got), tc.want)
			}
		})
	}
}

func TestChangeIDIsStableForOneExportOnly(t *testing.T) {
	scope := events.Scope{Inventory: rows.Identity{Namespace: "default", Name: "inv"}}
	a1, a2 := row(t, "a", "1", "x"), row(t, "a", "1", "y")
	plan := func(prev, next *rows.Snapshot, export string) string {
		d := rows.Diff(prev, next)
		d.Export = export
		return events.Plan(scope, d, events.State{})[0].ID
	}
	first := plan(snap(a1), snap(a2), "e1")
	retry := plan(snap(a1), snap(a2), "e1")
	back := plan(snap(a2), snap(a1), "e2")
	again := plan(snap(a1), snap(a2), "e3") // A→B→A→B: the same change, made again
	created := plan(nil, snap(a1), "e1")
	if first != retry {
		t.Error("a retry of one export got new ids: the broker would not drop the duplicate")
	}
	if first == back || back == created || first == created {
		t.Error("different changes share an id: the broker would drop one")
	}
	if first == again {
		t.Error("the same change made again in a later export kept its id: the broker would drop it as a duplicate")
	}
}

func TestBodyAndHeaders(t *testing.T) {
	scope := events.Scope{Cluster: "c<1>", Inventory: rows.Identity{Namespace: "default", Name: "inv"}}
	c := events.Plan(scope, rows.Diff(nil, snap(row(t, "a", "1", "x"))), events.State{})[0]
	var body map[string]any
	if err := json.Unmarshal(scope.Body(c, time.Unix(1, 0)), &body); err != nil {
		t.Fatal(err)
	}
	row := body["row"].(map[string]any)
	if body["schemaVersion"] != rows.SchemaVersion || body["change"] != "upsert" || body["changeId"] != c.ID ||
		body["cluster"] != "c<1>" || body["key"] != c.Key || row["name"] != "a" || body["timestamp"] != "1970-01-01T00:00:01Z" {
		t.Fatalf("body %v", body)
	}
	h := map[string]string{}
	for _, kv := range scope.Headers(c) {
		h[kv[0]] = kv[1]
	}
	if h[events.HeaderInventory] != "default/inv" || h[events.HeaderCluster] != "c<1>" || h[events.HeaderRowSum] != c.Sum || h[events.HeaderChangeID] != c.ID {
		t.Fatalf("headers %v", h)
	}
	st := events.State{}
	st.Fold(scope, func(k string) string { return h[k] })
	if st[c.Key] != c.Sum {
		t.Fatalf("folding the message back gives %v", st)
	}
	other := events.Scope{Cluster: "west", Inventory: scope.Inventory}
	st2 := events.State{}
	st2.Fold(other, func(k string) string { return h[k] })
	if len(st2) != 0 {
		t.Fatal("another cluster's message was folded")
	}
}
