package demo

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"kollect.dev/kollect/internal/servers/s3test"
)

//go:embed query.mjs
var queryScript string

// parquetAct shows the same inventory as Parquet in the S3 bucket, once
// it holds what Git holds, and queries it with DuckDB when the demo was
// given one (make demo installs its Node API from npm).
func parquetAct(ctx context.Context, o Options, repo string, s3 *s3test.Server, dir string) error {
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
		if head := headChecksum(repo); m.Checksum == "" || head == "" || !strings.HasPrefix(m.Checksum, head) {
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

// headChecksum is the short checksum of the snapshot the repository's
// last commit holds (the demo's commit subjects end in "@ <checksum>").
func headChecksum(repo string) string {
	subject, err := git(repo, "log", "-1", "--format=%s", "main")
	if err != nil {
		return ""
	}
	if m := checksumInSubject.FindStringSubmatch(subject); m != nil {
		return m[1]
	}
	return ""
}

var checksumInSubject = regexp.MustCompile(`@ ([0-9a-f]{12})$`)
