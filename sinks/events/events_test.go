package events_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
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
	var st events.Recovered
	st.Fold(scope, func(k string) string { return h[k] })
	if st.State[c.Key] != c.Sum {
		t.Fatalf("folding the message back gives %v", st.State)
	}
	other := events.Scope{Cluster: "west", Inventory: scope.Inventory}
	var st2 events.Recovered
	st2.Fold(other, func(k string) string { return h[k] })
	if len(st2.State) != 0 {
		t.Fatal("another cluster's message was folded")
	}
}

// TestRecoveryNamesTheWriter: messages carry their publisher, and a full
// export over live rows another operator published last is refused,
// unless adopted or the rows are gone.
func TestRecoveryNamesTheWriter(t *testing.T) {
	inv := rows.Identity{Namespace: "default", Name: "inv"}
	a := events.Scope{Cluster: "c", Inventory: inv, Writer: "uid-a"}
	b := events.Scope{Cluster: "c", Inventory: inv, Writer: "uid-b"}
	r1 := row(t, "x", "1", "v1")
	snapA := rows.NewSnapshot(inv, []*rows.Row{r1}, time.Unix(1, 0))
	published := func(s events.Scope, changes []events.Change) *events.Recovered {
		var rec events.Recovered
		for _, c := range changes {
			h := map[string]string{}
			for _, kv := range s.Headers(c) {
				h[kv[0]] = kv[1]
			}
			if h[events.HeaderWriter] != s.Writer {
				t.Fatalf("header %s = %q, want %q", events.HeaderWriter, h[events.HeaderWriter], s.Writer)
			}
			rec.Fold(s, func(k string) string { return h[k] })
		}
		return &rec
	}
	rec := published(a, events.Plan(a, rows.Diff(nil, snapA), events.State{}))
	if err := rec.Check(a, ""); err != nil {
		t.Fatalf("the publisher itself was refused: %v", err)
	}
	var fw *sinks.ForeignWriter
	if err := rec.Check(b, ""); !errors.As(err, &fw) || fw.Holder != "uid-a" {
		t.Fatalf("another writer's recovery: %v, want a refusal naming uid-a", err)
	}
	if err := rec.Check(b, "uid-a"); err != nil {
		t.Fatalf("adopting uid-a was refused: %v", err)
	}
	empty := rows.NewSnapshot(inv, nil, time.Unix(2, 0))
	cleared := published(a, events.Plan(a, rows.Diff(snapA, empty), nil))
	cleared.State = rec.State
	for k := range cleared.State {
		delete(cleared.State, k) // the tombstones folded over the live row
	}
	if err := cleared.Check(b, ""); err != nil {
		t.Fatalf("a scope without live rows was refused: %v", err)
	}
}
