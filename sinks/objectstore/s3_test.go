package objectstore_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"

	"kollect.dev/kollect/internal/servers/s3test"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/objectstore"
)

// config is one way of writing a bucket the suite runs.
type config struct {
	name                        string
	format, compression, layout string
	template                    string
}

var configs = []config{
	{name: "JSONDocument", format: "json", template: "inventory/{cluster}/{namespace}/{name}{extension}"},
	{name: "NDJSONSplitGzip", format: "ndjson", compression: "gzip", layout: "split",
		template: "inventory/{cluster}/{namespace}/{name}/{sourceNamespace}{extension}"},
	{name: "JSONPerResource", format: "json", layout: "perResource",
		template: "inventory/{cluster}/{namespace}/{name}/{sourceNamespace}/{kind}/{sourceName}{extension}"},
	{name: "ParquetZstd", format: "parquet", compression: "zstd"},
}

func open(t testing.TB, srv *s3test.Server, bucket, prefix string) func() *objectstore.Config {
	return func() *objectstore.Config {
		hc, err := sinks.HTTPClient(nil, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		b, redact, err := objectstore.OpenS3(context.Background(), objectstore.Endpoint{BaseURL: srv.URL, Bucket: bucket},
			map[string][]byte{"accessKeyID": []byte(s3test.AccessKey), "secretAccessKey": []byte(s3test.SecretKey)}, false, "", hc)
		if err != nil {
			t.Fatal(err)
		}
		return &objectstore.Config{Bucket: b, Name: "s3://" + bucket + "/" + prefix, Prefix: prefix, Redact: redact}
	}
}

// TestS3Conformance runs the sink conformance suite against an S3 server
// for each format and layout: first export, update, delete, empty,
// identical, restart, two clusters in one bucket, an outage.
func TestS3Conformance(t *testing.T) {
	srv := s3test.Start(t)
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			bucket := strings.ToLower(c.name)
			if err := srv.CreateBucket(bucket); err != nil {
				t.Fatal(err)
			}
			newCfg := open(t, srv, bucket, "fleet")
			sinktest.Run(t, harness(c, s3Read(srv, bucket), func(t *testing.T) *objectstore.Config { return newCfg() }, srv))
		})
	}
}

// restartable is a test server an outage can stop and restart.
type restartable interface {
	Stop()
	Restart() error
}

// harness runs the conformance suite on a bucket: open gives a fresh
// store configuration (bucket, prefix "fleet", redaction) for each new
// backend; c says how it writes; get reads the bucket back.
func harness(c config, get read, open func(t *testing.T) *objectstore.Config, srv restartable) sinktest.Harness {
	return sinktest.Harness{
		WholeObjects: c.layout != "perResource",
		New: func(t *testing.T, cluster string) sinks.Backend {
			cfg := open(t)
			cfg.Prefix, cfg.Cluster, cfg.Format, cfg.Compression, cfg.Layout, cfg.PathTemplate = "fleet", cluster, c.format, c.compression, c.layout, c.template
			st, err := objectstore.New(*cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(st.Close)
			return sinks.Whole(st)
		},
		State: func(t *testing.T, id rows.Identity, cluster string) []string {
			return state(t, get, "fleet", id, cluster)
		},
		Version: func(t *testing.T, id rows.Identity, cluster string) string {
			return version(t, get, "fleet", id, cluster)
		},
		Stop: func(*testing.T) { srv.Stop() },
		Start: func(t *testing.T) {
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// read fetches an object's body and Content-Encoding; ok is false when
// it does not exist.
type read func(t *testing.T, key string) (body []byte, encoding string, ok bool)

func s3Read(srv *s3test.Server, bucket string) read {
	return func(t *testing.T, key string) ([]byte, string, bool) {
		t.Helper()
		out, err := srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			if strings.Contains(err.Error(), "NoSuchKey") || strings.Contains(err.Error(), "404") {
				return nil, "", false
			}
			t.Fatal(err)
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b, aws.ToString(out.ContentEncoding), true
	}
}

func manifestKey(prefix string, id rows.Identity, cluster string) string {
	if cluster == "" {
		cluster = "default"
	}
	return fmt.Sprintf("%s/.kollect/%s/%s/%s.json", prefix, cluster, id.Namespace, id.Name)
}

// manifestOf reads the sink's manifest of an inventory.
func manifestOf(t *testing.T, get read, prefix string, id rows.Identity, cluster string) (map[string]any, bool) {
	t.Helper()
	b, _, ok := get(t, manifestKey(prefix, id, cluster))
	if !ok {
		return nil, false
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m, true
}

// state decodes every object the manifest names back into row JSON, as a
// reader of the bucket would.
func state(t *testing.T, get read, prefix string, id rows.Identity, cluster string) []string {
	t.Helper()
	m, ok := manifestOf(t, get, prefix, id, cluster)
	if !ok {
		return nil
	}
	var out []string
	for key := range m["objects"].(map[string]any) {
		body, enc, ok := get(t, key)
		if !ok {
			t.Fatalf("the manifest names %s, which does not exist", key)
		}
		out = append(out, decode(t, key, enc, body)...)
	}
	return out
}

// version changes when anything of the inventory is rewritten: every
// object carries its export time, so its bytes change.
func version(t *testing.T, get read, prefix string, id rows.Identity, cluster string) string {
	t.Helper()
	m, ok := manifestOf(t, get, prefix, id, cluster)
	if !ok {
		return "none"
	}
	keys := []string{manifestKey(prefix, id, cluster)}
	for k := range m["objects"].(map[string]any) {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		b, _, _ := get(t, k)
		h.Write([]byte(k))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func decode(t *testing.T, key, encoding string, body []byte) []string {
	t.Helper()
	switch {
	case strings.HasSuffix(key, ".gz"):
		if encoding != "gzip" {
			t.Errorf("%s: Content-Encoding %q, want gzip", key, encoding)
		}
		r, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(r)
		key = strings.TrimSuffix(key, ".gz")
	case strings.HasSuffix(key, ".zst"):
		d, _ := zstd.NewReader(nil)
		var err error
		if body, err = d.DecodeAll(body, nil); err != nil {
			t.Fatal(err)
		}
		key = strings.TrimSuffix(key, ".zst")
	}
	switch {
	case strings.HasSuffix(key, ".ndjson"):
		return strings.Split(strings.TrimSpace(string(body)), "\n")
	case strings.HasSuffix(key, ".parquet"):
		return fromParquet(t, body)
	}
	var env struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Items == nil {
		return []string{string(body)} // a perResource object: one row
	}
	out := make([]string, 0, len(env.Items))
	for _, it := range env.Items {
		out = append(out, string(it))
	}
	return out
}

// fromParquet rebuilds row JSON from the Parquet columns.
func fromParquet(t *testing.T, body []byte) []string {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range f.Schema().Columns() {
		cols = append(cols, c[0])
	}
	want := []string{"api_version", "attr_image", "attr_version", "attributes", "cluster", "exported_at", "group", "inventory_name",
		"inventory_namespace", "kind", "name", "namespace", "target_name", "target_namespace", "uid"}
	if strings.Join(cols, ",") != strings.Join(want, ",") {
		t.Fatalf("parquet columns %v, want %v", cols, want)
	}
	r := parquet.NewGenericReader[pqRow](f)
	defer r.Close()
	recs := make([]pqRow, f.NumRows())
	n, err := r.Read(recs)
	if err != nil && !errors.Is(err, io.EOF) || n != len(recs) {
		t.Fatalf("read %d of %d parquet rows: %v", n, len(recs), err)
	}
	var out []string
	for _, rec := range recs {
		var attrs map[string]any
		if err := json.Unmarshal(rec.Attributes, &attrs); err != nil {
			t.Fatal(err)
		}
		if img, _ := attrs["image"].(string); rec.AttrImage == nil || *rec.AttrImage != img {
			t.Errorf("attr_image %v, attributes.image %q", rec.AttrImage, img)
		}
		if rec.ExportedAt.IsZero() || rec.Cluster == "" {
			t.Errorf("exported_at %v, cluster %q", rec.ExportedAt, rec.Cluster)
		}
		row := map[string]any{"targetNamespace": rec.TargetNamespace, "targetName": rec.TargetName, "namespace": rec.Namespace,
			"name": rec.Name, "version": rec.APIVersion, "kind": rec.Kind, "uid": rec.UID, "attributes": attrs}
		if rec.Group != nil {
			row["group"] = *rec.Group
		}
		b, _ := json.Marshal(row)
		out = append(out, string(b))
	}
	return out
}

// pqRow reads the Parquet columns.
type pqRow struct {
	APIVersion      string    `parquet:"api_version"`
	AttrImage       *string   `parquet:"attr_image,optional"`
	AttrVersion     *string   `parquet:"attr_version,optional"`
	Attributes      []byte    `parquet:"attributes"`
	Cluster         string    `parquet:"cluster"`
	ExportedAt      time.Time `parquet:"exported_at,timestamp(microsecond)"`
	Group           *string   `parquet:"group,optional"`
	InventoryName   string    `parquet:"inventory_name"`
	InventoryNS     string    `parquet:"inventory_namespace"`
	Kind            string    `parquet:"kind"`
	Name            string    `parquet:"name"`
	Namespace       string    `parquet:"namespace"`
	TargetName      string    `parquet:"target_name"`
	TargetNamespace string    `parquet:"target_namespace"`
	UID             string    `parquet:"uid"`
}
