package bigquery

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"kollect.dev/kollect/internal/servers/bqtest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// objects builds n rows of target, with content version v.
func objects(t *testing.T, target string, n int, v string) []*rows.Row {
	t.Helper()
	out := make([]*rows.Row, 0, n)
	for i := range n {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: target, Version: "v1", Kind: "ConfigMap"},
			Namespace: "demo", Name: fmt.Sprintf("%s-%d", target, i), UID: fmt.Sprintf("%s-uid-%d", target, i)}, rows.AttributesOf(map[string]any{"v": v}))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

type batchFixture struct {
	srv  *bqtest.Server
	sink *Sink
	ctx  context.Context
}

func newBatchFixture(t *testing.T, cluster string, srv *bqtest.Server, key []byte) *batchFixture {
	t.Helper()
	hc, err := sinks.HTTPClient(nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), Config{Project: "p", Dataset: "d", Table: "items", Location: "EU", Cluster: cluster, Key: key, Endpoint: srv.URL, HTTP: hc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return &batchFixture{srv: srv, sink: s, ctx: context.Background()}
}

// run runs the deltas as one batch and returns each export's result.
func (f *batchFixture) run(t *testing.T, ds ...*rows.Delta) []*request {
	t.Helper()
	var batch []*request
	for _, d := range ds {
		r, err := stage(d, d.Full() || len(d.Next.Rows) == 0)
		if err != nil {
			t.Fatal(err)
		}
		r.done = make(chan struct{})
		batch = append(batch, r)
	}
	f.sink.t.run(batch)
	return batch
}

// held returns the payload of each row the table holds for an inventory,
// by object name.
func (f *batchFixture) held(t *testing.T, ns, cluster string) map[string]string {
	t.Helper()
	_, rs, _ := f.srv.Table("p", "d", "items")
	out := map[string]string{}
	for _, r := range rs {
		if r.Values["inventory_namespace"] == ns && r.Values["cluster"] == cluster {
			out[r.Values["source_uid"].(string)] = r.Values["payload"].(string)
		}
	}
	return out
}

func snap(ns string, rs ...[]*rows.Row) *rows.Snapshot {
	return rows.NewSnapshot(rows.Identity{Namespace: ns, Name: "inv"}, slices.Concat(rs...), time.Now())
}

// TestABatchExportsEachInventoryExactly: four inventories' exports in one
// batch (a partial snapshot that keeps a target, a delta, an emptied
// inventory, a delta of nothing) run as one load, one MERGE, one stats
// query and one DELETE, and leave each inventory exactly as its snapshot
// says, with each export's own count of rows held and written; the same
// inventory of another cluster is untouched.
func TestABatchExportsEachInventoryExactly(t *testing.T) {
	srv := bqtest.Start(t)
	srv.CreateDataset("p", "d", "EU")
	key := srv.ServiceAccount("p", "kollect@p.iam.gserviceaccount.com")
	f := newBatchFixture(t, "east", srv, key)
	west := newBatchFixture(t, "west", srv, key)
	if r := west.run(t, rows.Diff(nil, snap("a", objects(t, "shop", 4, "w")))); r[0].err != nil {
		t.Fatal(r[0].err)
	}

	a0, b0, c0, d0 := snap("a", objects(t, "shop", 10, "1"), objects(t, "cart", 5, "1")), snap("b", objects(t, "shop", 10, "1")),
		snap("c", objects(t, "shop", 10, "1")), snap("d", objects(t, "shop", 10, "1"))
	from, loads := len(srv.Statements()), srv.Loads()
	for _, r := range f.run(t, rows.Diff(nil, a0), rows.Diff(nil, b0), rows.Diff(nil, c0), rows.Diff(nil, d0)) {
		if want := map[string]int{"a": 15}[r.ns]; r.err != nil || r.res.rows != max(want, 10) || r.res.written != r.res.rows {
			t.Fatalf("first export of %s: %+v %v", r.ns, r.res, r.err)
		}
	}
	if got := names(srv.Statements()[from:]); !slices.Equal(got, []string{"MERGE", "SELECT", "DELETE"}[:2]) || srv.Loads()-loads != 1 {
		t.Fatalf("four first exports ran %q and %d loads, want one load, MERGE, SELECT", got, srv.Loads()-loads)
	}

	// a keeps cart (not listed) and loses 3 shop rows; b changes one row
	// and loses two; c is emptied; d is unchanged.
	shopA := objects(t, "shop", 7, "1")
	b1 := snap("b", objects(t, "shop", 1, "2"), objects(t, "shop", 8, "1")[1:])
	from, loads = len(srv.Statements()), srv.Loads()
	got := f.run(t,
		rows.Diff(nil, snap("a", shopA).Keeping([]string{"cart"})),
		rows.Diff(b0, b1),
		rows.Diff(c0, snap("c")),
		rows.Diff(d0, snap("d", objects(t, "shop", 10, "1"))))
	want := map[string]result{"a": {rows: 12, written: 3}, "b": {rows: 8, written: 3}, "c": {rows: 0, written: 10}, "d": {rows: 10}}
	for _, r := range got {
		if r.err != nil || r.res != want[r.ns] {
			t.Errorf("%s: %+v %v, want %+v", r.ns, r.res, r.err, want[r.ns])
		}
	}
	if got := names(srv.Statements()[from:]); !slices.Equal(got, []string{"MERGE", "SELECT", "DELETE"}) || srv.Loads()-loads != 1 {
		t.Errorf("the batch ran %q and %d loads, want one load, MERGE, SELECT, DELETE", got, srv.Loads()-loads)
	}
	versions := func(rs []*rows.Row, v string) map[string]string {
		out := map[string]string{}
		for _, r := range rs {
			out[r.UID] = v
		}
		return out
	}
	bWant := versions(b1.Rows, "1")
	bWant["shop-uid-0"] = "2"
	aWant := versions(shopA, "1")
	maps.Copy(aWant, versions(objects(t, "cart", 5, "1"), "1"))
	for ns, wantRows := range map[string]map[string]string{"a": aWant, "b": bWant, "c": {}, "d": versions(d0.Rows, "1")} {
		held := f.held(t, ns, "east")
		if len(held) != len(wantRows) {
			t.Errorf("%s holds %d rows, want %d", ns, len(held), len(wantRows))
		}
		for uid, v := range wantRows {
			if p := held[uid]; !strings.Contains(p, fmt.Sprintf(`"v":%q`, v)) {
				t.Errorf("%s: %s holds %s, want version %s", ns, uid, p, v)
			}
		}
	}
	if n := len(west.held(t, "a", "west")); n != 4 {
		t.Errorf("cluster west's inventory holds %d rows after east's batches, want 4", n)
	}
	if tables := srv.Tables("p", "d"); !slices.Equal(tables, []string{"items"}) {
		t.Errorf("tables after the batches: %v, want only items (staging tables dropped)", tables)
	}
}

// TestARowBigQueryRefusesFailsOnlyItsInventory: BigQuery refuses a whole
// load job for one bad row. A batch that fails for good runs each export
// alone, so only the inventory holding the row fails; its neighbours in
// the batch are exported.
func TestARowBigQueryRefusesFailsOnlyItsInventory(t *testing.T) {
	srv := bqtest.Start(t)
	srv.CreateDataset("p", "d", "EU")
	f := newBatchFixture(t, "", srv, srv.ServiceAccount("p", "kollect@p.iam.gserviceaccount.com"))
	srv.RefuseRowsOf("bad")
	got := f.run(t, rows.Diff(nil, snap("good", objects(t, "shop", 3, "1"))), rows.Diff(nil, snap("bad", objects(t, "shop", 3, "1"))),
		rows.Diff(nil, snap("fine", objects(t, "shop", 2, "1"))))
	for _, r := range got {
		switch {
		case r.ns == "bad" && (r.err == nil || !errors.Is(r.err, sinks.ErrPermanent) || !strings.Contains(r.err.Error(), "refused")):
			t.Errorf("the inventory with the refused row: %v, want BigQuery's refusal, permanent", r.err)
		case r.ns != "bad" && r.err != nil:
			t.Errorf("%s failed beside the refused row: %v", r.ns, r.err)
		}
	}
	if g, fine := len(f.held(t, "good", "")), len(f.held(t, "fine", "")); g != 3 || fine != 2 {
		t.Errorf("the neighbours hold %d and %d rows, want 3 and 2", g, fine)
	}
}

// names are the statements' first words.
func names(sts []bqtest.Statement) []string {
	var out []string
	for _, st := range sts {
		out = append(out, strings.Fields(st.SQL)[0])
	}
	return out
}
