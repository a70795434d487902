package bigquery_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"kollect.dev/kollect/internal/servers/bqtest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/bigquery"
)

const (
	project = "fleet-analytics"
	dataset = "inventory"
	table   = "inventory_items"
)

// fake starts the fake with the dataset and a service account, and
// returns it with that account's key.
func fake(t testing.TB) (*bqtest.Server, []byte) {
	t.Helper()
	srv := bqtest.Start(t)
	srv.CreateDataset(project, dataset, "EU")
	return srv, srv.ServiceAccount(project, "kollect@fleet-analytics.iam.gserviceaccount.com")
}

func newSink(t testing.TB, cfg bigquery.Config) *bigquery.Sink {
	t.Helper()
	hc, err := sinks.HTTPClient(nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP == nil {
		cfg.HTTP = hc
	}
	s, err := bigquery.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func config(srv *bqtest.Server, key []byte, cluster string) bigquery.Config {
	return bigquery.Config{Project: project, Dataset: dataset, Table: table, Location: "EU", Cluster: cluster, Key: key, Endpoint: srv.URL}
}

// scoped returns the rows of the table for an inventory and cluster.
func scoped(t testing.TB, srv *bqtest.Server, id rows.Identity, cluster string) []bqtest.Row {
	t.Helper()
	_, rs, ok := srv.Table(project, dataset, table)
	if !ok {
		return nil
	}
	var out []bqtest.Row
	for _, r := range rs {
		if r.Values["inventory_namespace"] == id.Namespace && r.Values["inventory_name"] == id.Name && r.Values["cluster"] == cluster {
			out = append(out, r)
		}
	}
	return out
}

func TestBigQueryConformance(t *testing.T) {
	srv, key := fake(t)
	sinktest.Run(t, sinktest.Harness{
		New: func(t *testing.T, cluster string) sinks.Backend { return newSink(t, config(srv, key, cluster)) },
		State: func(t *testing.T, id rows.Identity, cluster string) []string {
			var out []string
			for _, r := range scoped(t, srv, id, cluster) {
				out = append(out, r.Values["payload"].(string))
			}
			return out
		},
		Version: func(t *testing.T, id rows.Identity, cluster string) string {
			var out []string
			for _, r := range scoped(t, srv, id, cluster) {
				out = append(out, fmt.Sprintf("%s/%s@%d", r.Values["target_name"], r.Values["source_uid"], r.Version))
			}
			slices.Sort(out)
			return strings.Join(out, ",")
		},
		Stop: func(*testing.T) { srv.Stop() },
		Start: func(t *testing.T) {
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// TestStatementsCarryNoRowContent: rows travel only in load jobs; the
// statements are fixed text whose size does not grow with the inventory,
// with the cluster and time as typed parameters, and an export runs only
// the statements it needs.
func TestStatementsCarryNoRowContent(t *testing.T) {
	srv, key := fake(t)
	ctx := context.Background()
	id := rows.Identity{Namespace: "shop", Name: "inventory"}
	b := &sinktest.Binding{Backend: newSink(t, config(srv, key, "east"))}
	steps := []struct {
		what string
		rs   []*rows.Row
		want []string
	}{
		{"first export (the table's state unknown)", sinktest.Rows(300, "1"), []string{"MERGE", "stats"}},
		{"nothing changed", sinktest.Rows(300, "1"), []string{"count"}},
		{"5 rows changed", append(sinktest.Rows(5, "2"), sinktest.Rows(300, "1")[5:]...), []string{"MERGE", "stats"}},
		{"10 rows gone", append(sinktest.Rows(5, "2"), sinktest.Rows(290, "1")[5:]...), []string{"stats", "DELETE"}},
		{"all gone", nil, []string{"stats", "DELETE"}},
	}
	for _, step := range steps {
		from := len(srv.Statements())
		ack, err := b.Export(ctx, sinktest.Snap(id, step.rs))
		if err != nil || ack.Rows != len(step.rs) {
			t.Fatalf("%s: holds %d, %v", step.what, ack.Rows, err)
		}
		if got := kinds(srv.Statements()[from:]); !slices.Equal(got, step.want) {
			t.Errorf("%s ran %q, want %q", step.what, got, step.want)
		}
	}
	for _, st := range srv.Statements() {
		if strings.Contains(st.SQL, "registry.example") || strings.Contains(st.SQL, "uid-0") || strings.Contains(st.SQL, "UNION ALL") {
			t.Errorf("a statement carries row content: %s", st.SQL)
		}
		if len(st.SQL) > 2500 {
			t.Errorf("a statement of %d bytes", len(st.SQL))
		}
		if p := st.Params["cluster"]; !st.DryRun && (p.Type != "STRING" || p.Value != "east") {
			t.Errorf("%s: @cluster is %+v, want the STRING east", strings.Fields(st.SQL)[0], p)
		}
		if p, ok := st.Params["exported_at"]; ok && p.Type != "TIMESTAMP" {
			t.Errorf("@exported_at is %+v", p)
		}
		if p, ok := st.Params["scopes"]; ok && (p.Type != "ARRAY<STRING>" || !slices.Equal(p.Values, []string{"shop/inventory"})) {
			t.Errorf("@scopes is %+v", p)
		}
	}
}

// kinds names each statement: MERGE, DELETE, stats (the counts of a
// batch that staged rows) or count (of one that staged none).
func kinds(sts []bqtest.Statement) []string {
	var out []string
	for _, st := range sts {
		switch f := strings.Fields(st.SQL); {
		case f[0] != "SELECT":
			out = append(out, f[0])
		case strings.HasPrefix(f[1], "t."):
			out = append(out, "count")
		default:
			out = append(out, "stats")
		}
	}
	return out
}

// TestTableAsSpecified: the table an ensure-mode sink creates, and no
// staging table left beside it after an export.
func TestTableAsSpecified(t *testing.T) {
	srv, key := fake(t)
	ctx := context.Background()
	s := newSink(t, config(srv, key, ""))
	if err := s.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	meta, _, ok := srv.Table(project, dataset, table)
	if !ok {
		t.Fatal("the probe did not create the table")
	}
	var cols []string
	for _, f := range meta.Schema.Fields {
		cols = append(cols, f.Name+" "+f.Type+" "+f.Mode)
	}
	want := []string{"inventory_namespace STRING REQUIRED", "inventory_name STRING REQUIRED", "target_name STRING REQUIRED", "source_uid STRING REQUIRED",
		"cluster STRING REQUIRED", "resource_namespace STRING REQUIRED", "payload JSON ", "exported_at TIMESTAMP "}
	if !slices.Equal(cols, want) {
		t.Errorf("columns %q, want %q", cols, want)
	}
	if p := meta.TimePartitioning; p == nil || p.Type != "DAY" || p.Field != "exported_at" {
		t.Errorf("partitioning %+v, want DAY on exported_at", p)
	}
	if c := meta.Clustering; c == nil || !slices.Equal(c.Fields, bigquery.Clustering) {
		t.Errorf("clustering %+v, want %v", c, bigquery.Clustering)
	}
	if _, err := s.Export(ctx, rows.Diff(nil, sinktest.Snap(rows.Identity{Namespace: "a", Name: "b"}, sinktest.Rows(4, "1")))); err != nil {
		t.Fatal(err)
	}
	if got := srv.Tables(project, dataset); !slices.Equal(got, []string{table}) {
		t.Errorf("tables after an export: %v, want only %s", got, table)
	}
	_, rs, _ := srv.Table(project, dataset, table)
	if len(rs) != 4 || rs[0].Values["resource_namespace"] != "demo" || !strings.Contains(rs[0].Values["payload"].(string), `"kind":"Deployment"`) {
		t.Errorf("rows %+v", rs)
	}
}

// TestWhatAnOperatorMustFix: a missing dataset, a missing table in mode
// existing, a job location the dataset is not in, and a request without
// credentials each fail for good, saying what to fix.
func TestWhatAnOperatorMustFix(t *testing.T) {
	srv, key := fake(t)
	ctx := context.Background()
	for _, tc := range []struct {
		what string
		cfg  func(c *bigquery.Config)
		want string
	}{
		{"missing dataset", func(c *bigquery.Config) { c.Dataset = "nope" }, "dataset fleet-analytics.nope does not exist"},
		{"existing mode without the table", func(c *bigquery.Config) { c.Existing = true; c.Table = "prepared" }, "provisioning.mode is existing"},
		{"no credentials", func(c *bigquery.Config) { c.Key, c.NoAuth = nil, true }, "credentials were refused"},
		{"a key the server never issued", func(c *bigquery.Config) { c.Key = bqtest.Start(t).ServiceAccount(project, "x@y") }, ""},
	} {
		cfg := config(srv, key, "")
		tc.cfg(&cfg)
		err := newSink(t, cfg).Probe(ctx)
		if err == nil || (tc.want != "" && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want an error saying %q", tc.what, err, tc.want)
		}
		if tc.want != "" && !errors.Is(err, sinks.ErrPermanent) {
			t.Errorf("%s: %v is retried; retrying cannot fix it", tc.what, err)
		}
	}
	cfg := config(srv, key, "")
	cfg.Location = "US"
	if _, err := newSink(t, cfg).Export(ctx, rows.Diff(nil, sinktest.Snap(rows.Identity{Namespace: "a", Name: "b"}, sinktest.Rows(2, "1")))); err == nil ||
		!strings.Contains(err.Error(), "location US") {
		t.Errorf("jobs in US on a dataset in EU: %v", err)
	}
}

// TestAnExportLargerThanOneUploadChunk: over 16 MiB of changed rows go up
// in resumable chunks (smaller loads in one multipart request).
func TestAnExportLargerThanOneUploadChunk(t *testing.T) {
	srv, key := fake(t)
	rs := sinktest.Rows(60_000, "1")
	ack, err := newSink(t, config(srv, key, "")).Export(context.Background(), rows.Diff(nil, sinktest.Snap(rows.Identity{Namespace: "big", Name: "one"}, rs)))
	if err != nil {
		t.Fatal(err)
	}
	if ack.Bytes < 16<<20 {
		t.Fatalf("staged %d bytes; the test needs more than one 16 MiB chunk", ack.Bytes)
	}
	if ack.Rows != len(rs) || ack.Written != len(rs) {
		t.Errorf("wrote %d, holds %d, want %d", ack.Written, ack.Rows, len(rs))
	}
}
