package objectstore_test

import (
	"context"
	"encoding/csv"
	"errors"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob/memblob"

	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/objectstore"
)

func TestHotColumns(t *testing.T) {
	cases := []struct {
		in          []string
		attrs, cols string
	}{
		{nil, "image,version", "attr_image,attr_version"},
		{[]string{" Image ", "image", "app.kubernetes.io/name", "ünï", "ü"}, "Image,app.kubernetes.io/name,ü,ünï", "attr_image,attr_app_kubernetes_ioname,attr_unknown,attr_n"},
		{[]string{}, "", ""},
	}
	for _, c := range cases {
		a, cols := objectstore.HotColumns(c.in)
		if strings.Join(a, ",") != c.attrs || strings.Join(cols, ",") != c.cols {
			t.Errorf("HotColumns(%q) = %v %v, want %s / %s", c.in, a, cols, c.attrs, c.cols)
		}
	}
}

// A CSV object has the identity columns then one column per attribute,
// values as text (strings as they are, numbers formatted, others JSON).
func TestCSVColumns(t *testing.T) {
	b := memblob.OpenBucket(nil)
	st, err := objectstore.New(objectstore.Config{Bucket: b, Format: "csv", Cluster: "east"})
	if err != nil {
		t.Fatal(err)
	}
	id := rows.Identity{Namespace: "ops", Name: "inv", Generation: 2}
	r, _ := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "ops", TargetName: "apps", Version: "v1", Kind: "ConfigMap"}, Namespace: "shop", Name: "web", UID: "u1"}, rows.AttributesOf(map[string]any{"replicas": 3, "image": "web:1", "labels": map[string]any{"a": "b"}}))
	if _, err := st.Export(context.Background(), rows.NewSnapshot(id, []*rows.Row{r}, time.Now())); err != nil {
		t.Fatal(err)
	}
	body, err := b.ReadAll(context.Background(), "inventory/ops/inv.csv")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("csv: %v %q", err, body)
	}
	want := [][]string{
		{"cluster", "inventory_namespace", "inventory_name", "target_namespace", "target_name", "namespace", "name", "uid", "group", "api_version", "kind", "image", "labels", "replicas"},
		{"east", "ops", "inv", "ops", "apps", "shop", "web", "u1", "", "v1", "ConfigMap", "web:1", `{"a":"b"}`, "3"},
	}
	for i := range want {
		if strings.Join(recs[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("line %d: %q, want %q", i, recs[i], want[i])
		}
	}
}

// What a sink cannot write is refused at once, permanently, saying why.
func TestConfigErrors(t *testing.T) {
	cases := []struct {
		cfg   objectstore.Config
		words string
	}{
		{objectstore.Config{Format: "yaml"}, `format "yaml"`},
		{objectstore.Config{Format: "json", Compression: "snappy"}, "snappy compression applies to Parquet only"},
		{objectstore.Config{Compression: "lz4"}, `compression "lz4"`},
		{objectstore.Config{Layout: "tree"}, `layout mode "tree"`},
	}
	for _, c := range cases {
		c.cfg.Bucket = memblob.OpenBucket(nil)
		_, err := objectstore.New(c.cfg)
		if err == nil || !errors.Is(err, sinks.ErrPermanent) || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%+v: got %v, want a permanent error with %q", c.cfg, err, c.words)
		}
	}
}

// Templates: an unknown variable, a path that escapes, and two rows at one
// key are permanent errors; nothing is written.
func TestPathTemplateErrors(t *testing.T) {
	id := rows.Identity{Namespace: "ops", Name: "inv"}
	cases := []struct {
		layout, tmpl, words string
	}{
		{"document", "inventory/{sourceName}.json", "does not know: {sourceName}"},
		{"document", "../outside/{name}.json", "not a clean object path"},
		{"perResource", "inventory/{kind}.json", "two objects of the export would be written"},
	}
	for _, c := range cases {
		b := memblob.OpenBucket(nil)
		st, err := objectstore.New(objectstore.Config{Bucket: b, Layout: c.layout, PathTemplate: c.tmpl})
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Export(context.Background(), sinktest.Snap(id, sinktest.Rows(3, "1")))
		if err == nil || !errors.Is(err, sinks.ErrPermanent) || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%s %q: got %v, want a permanent error with %q", c.layout, c.tmpl, err, c.words)
		}
		it := b.List(nil)
		if o, _ := it.Next(context.Background()); o != nil {
			t.Errorf("%s %q: wrote %s", c.layout, c.tmpl, o.Key)
		}
	}
}

// With PinNamespace (the operator's stores) every key holds the
// inventory's namespace as a segment: a template that would name another
// team's objects is refused and writes nothing; the defaults, Parquet's
// Hive paths and upstream's sample templates pass.
func TestKeysArePinnedUnderTheInventorysNamespace(t *testing.T) {
	id := rows.Identity{Namespace: "team-a", Name: "inv"}
	for _, c := range []struct {
		layout, format, tmpl string
		ok                   bool
	}{
		{"document", "", "", true},
		{"perResource", "", "", true},
		{"split", "", "", true},
		{"document", "parquet", "", true},
		{"document", "", "clusters/{cluster}/inventory/{namespace}/{name}.json", true},
		{"document", "", "inventory/team-b/{name}.json", false},
		{"document", "", "inventory/team-b/{name}-{namespace}.json", false},
		{"perResource", "", "clusters/{cluster}/team-b/{kind}/{sourceName}{extension}", false},
	} {
		b := memblob.OpenBucket(nil)
		st, err := objectstore.New(objectstore.Config{Bucket: b, Layout: c.layout, Format: c.format, PathTemplate: c.tmpl, PinNamespace: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Export(context.Background(), sinktest.Snap(id, sinktest.Rows(2, "1")))
		switch {
		case c.ok && err != nil:
			t.Errorf("%s %s %q: %v", c.layout, c.format, c.tmpl, err)
		case !c.ok && (err == nil || !errors.Is(err, sinks.ErrPermanent) || !strings.Contains(err.Error(), `namespace "team-a" as a path segment`)):
			t.Errorf("%s %q: got %v, want a permanent refusal", c.layout, c.tmpl, err)
		case !c.ok:
			if o, _ := b.List(nil).Next(context.Background()); o != nil {
				t.Errorf("%s %q: wrote %s", c.layout, c.tmpl, o.Key)
			}
		}
	}
}

// In a per-row layout an export writes the rows that changed and deletes
// the objects of rows that are gone; nothing else is touched.
func TestPerResourceWritesOnlyWhatChanged(t *testing.T) {
	b := memblob.OpenBucket(nil)
	st, err := objectstore.New(objectstore.Config{Bucket: b, Layout: "perResource"})
	if err != nil {
		t.Fatal(err)
	}
	id := rows.Identity{Namespace: "ops", Name: "inv"}
	base := sinktest.Rows(100, "1")
	if _, err := st.Export(context.Background(), sinktest.Snap(id, base)); err != nil {
		t.Fatal(err)
	}
	next := append(append([]*rows.Row{}, sinktest.Rows(10, "2")...), base[10:90]...) // 10 changed, 10 gone
	ack, err := st.Export(context.Background(), sinktest.Snap(id, next))
	if err != nil || ack.Written != 20 || ack.Rows != 90 {
		t.Fatalf("ack %+v, %v; want 20 written (10 objects rewritten, 10 deleted) of 90", ack, err)
	}
	n := 0
	it := b.List(nil)
	for {
		o, err := it.Next(context.Background())
		if o == nil || err != nil {
			break
		}
		if !strings.HasPrefix(o.Key, ".kollect/") {
			n++
		}
	}
	if n != 90 {
		t.Errorf("the bucket holds %d row objects, want 90", n)
	}
}

// The endpoint forms upstream accepts; gs://bucket/prefix is a bucket
// and a prefix (upstream takes gs:// for a custom endpoint).
func TestParseEndpoint(t *testing.T) {
	cases := []struct {
		raw, scheme, base, bucket, prefix, words string
	}{
		{"s3://inventory/fleet/a", "s3", "", "inventory", "fleet/a", ""},
		{"gs://inventory/fleet", "gs", "", "inventory", "fleet", ""},
		{"inventory", "s3", "", "inventory", "", ""},
		{"https://minio.example:9000/inventory/p/", "s3", "https://minio.example:9000", "inventory", "p", ""},
		{"https://storage.googleapis.com/inventory", "gs", "https://storage.googleapis.com", "inventory", "", ""},
		{"gs://inventory", "s3", "", "", "", "scheme gs:// is not one this sink type reads"},
		{"https://user:pw@minio.example/inventory", "s3", "", "", "", "credentials, queries and fragments"},
		{"https://minio.example/", "s3", "", "", "", "names no bucket"},
		{"", "s3", "", "", "", "spec.endpoint is empty"},
	}
	for _, c := range cases {
		e, err := objectstore.ParseEndpoint(c.raw, c.scheme)
		if c.words != "" {
			if err == nil || !strings.Contains(err.Error(), c.words) {
				t.Errorf("%q: error %v, want %q", c.raw, err, c.words)
			}
			continue
		}
		if err != nil || e.BaseURL != c.base || e.Bucket != c.bucket || e.Prefix != c.prefix {
			t.Errorf("%q: %+v %v", c.raw, e, err)
		}
	}
}

// A per-row path names the core group "core" and a cluster-scoped
// object's namespace "_cluster", so no segment is ever empty.
func TestPerRowPathsOfCoreAndClusterScopedObjects(t *testing.T) {
	r, _ := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "ops", TargetName: "nodes", Version: "v1", Kind: "Node"}, Name: "node-1", UID: "u1"}, nil)
	paths, err := objectstore.Paths(objectstore.Config{Layout: "perResource", PathTemplate: "{group}/{sourceNamespace}/{kind}/{sourceName}.json"},
		rows.NewSnapshot(rows.Identity{Namespace: "ops", Name: "inv"}, []*rows.Row{r}, time.Now()))
	if err != nil || len(paths) != 1 || paths[0] != "core/_cluster/node/node-1.json" {
		t.Fatalf("paths %v, %v", paths, err)
	}
}
