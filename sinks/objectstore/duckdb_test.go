//go:build integration

package objectstore_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gocloud.dev/blob/fileblob"

	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/objectstore"
)

// duckdbPrefix is where make test-deps installs DuckDB's Node API.
func duckdbPrefix(t *testing.T) string {
	t.Helper()
	p, err := sinktest.CachedTool("duckdb-current")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A Parquet export is what an analyst's DuckDB reads: upstream's columns
// with their types, one row per item, hot attributes as columns.
func TestParquetReadsInDuckDB(t *testing.T) {
	dir := t.TempDir()
	b, err := fileblob.OpenBucket(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := objectstore.New(objectstore.Config{Bucket: b, Format: "parquet", Compression: "snappy", Cluster: "lab-west"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := rows.Identity{Namespace: "ops", Name: "inv", Generation: 3}
	if _, err := st.Export(context.Background(), sinktest.Snap(id, sinktest.Rows(250, "1"))); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "inventory", "cluster=lab-west", "ns=ops", "name=inv", "generation=3.parquet")
	out, err := exec.Command("node", "testdata/duckdb.mjs", duckdbPrefix(t), file).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, out)
	}
	var got struct {
		Columns []struct {
			Name string `json:"column_name"`
			Type string `json:"column_type"`
		} `json:"columns"`
		Count []struct{ N json.Number } `json:"count"`
		Rows  []map[string]any          `json:"rows"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var cols []string
	for _, c := range got.Columns {
		cols = append(cols, c.Name+" "+c.Type)
	}
	want := "api_version VARCHAR,attr_image VARCHAR,attr_version VARCHAR,attributes BLOB,cluster VARCHAR,exported_at TIMESTAMP WITH TIME ZONE," +
		"group VARCHAR,inventory_name VARCHAR,inventory_namespace VARCHAR,kind VARCHAR,name VARCHAR,namespace VARCHAR,target_name VARCHAR,target_namespace VARCHAR,uid VARCHAR"
	if strings.Join(cols, ",") != want {
		t.Errorf("columns:\n%s\nwant:\n%s", strings.Join(cols, ","), want)
	}
	if len(got.Count) != 1 || got.Count[0].N.String() != "250" {
		t.Errorf("count %v, want 250", got.Count)
	}
	if len(got.Rows) != 2 || got.Rows[0]["name"] != "app-0000" || got.Rows[0]["attr_image"] != "registry.example/app:1" ||
		got.Rows[0]["group"] != "apps" || got.Rows[0]["note"] != "<&>" {
		t.Errorf("first rows: %v", got.Rows)
	}
}
