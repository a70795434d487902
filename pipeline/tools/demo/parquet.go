package demo

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/sinks/objectstore/s3test"
)

//go:embed query.mjs
var queryScript string

// parquetAct shows the same inventory as Parquet in the S3 bucket, once
// it holds what Git holds, and queries it with DuckDB when the demo was
// given one (make demo installs its Node API from npm).
func parquetAct(ctx context.Context, o Options, c client.Client, s3 *s3test.Server, dir string) error {
	say := func(format string, a ...any) { fmt.Fprintf(o.Out, "==> "+format+"\n", a...) }
	var key string
	var body []byte
	if _, err := waitFor(ctx, "the Parquet export to catch up with Git", func() (bool, error) {
		objs, err := s3.Objects(ctx, "inventory", "")
		if err != nil {
			return false, nil
		}
		var m struct{ Checksum string }
		_ = json.Unmarshal(objs[".kollect/local/default/shop.json"], &m)
		if m.Checksum == "" || m.Checksum != gitChecksum(ctx, c) {
			return false, nil
		}
		for k, v := range objs {
			if strings.HasSuffix(k, ".parquet") {
				key, body = k, v
			}
		}
		return key != "", nil
	}); err != nil {
		return err
	}
	say("The same rows as Parquet in an S3 bucket: s3://inventory/%s (%d bytes, zstd pages)", key, len(body))
	file := filepath.Join(dir, "shop.parquet")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		return err
	}
	if o.DuckDB == "" {
		say("No DuckDB here to query it (make demo installs DuckDB's Node API when npm is available)")
		return nil
	}
	script := filepath.Join(dir, "query.mjs")
	if err := os.WriteFile(script, []byte(queryScript), 0o644); err != nil {
		return err
	}
	say("Querying it with DuckDB: SELECT name, attr_image, attr_replicas, attr_ready FROM '%s' ORDER BY name", rel(file))
	out, err := exec.CommandContext(ctx, "node", script, o.DuckDB, file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("duckdb: %v: %s", err, out)
	}
	fmt.Fprintf(o.Out, "\n----- DuckDB over the Parquet export -----\n%s\n", out)
	return nil
}

// gitChecksum is the checksum the Git binding acknowledged last.
func gitChecksum(ctx context.Context, c client.Client) string {
	var inv unstructured.Unstructured
	inv.SetAPIVersion("kollect.dev/v1alpha1")
	inv.SetKind("KollectInventory")
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop"}, &inv); err != nil {
		return ""
	}
	exports, _, _ := unstructured.NestedSlice(inv.Object, "status", "sinkExports")
	for _, e := range exports {
		if m, ok := e.(map[string]any); ok && m["name"] == "snapshot/git" {
			sum, _ := m["lastChecksum"].(string)
			return sum
		}
	}
	return ""
}
