//go:build integration

package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"kollect.dev/kollect/pipeline/tools/cli"
)

// runPipeline runs upstream's kollect-pipeline command line.
func runPipeline(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	cmd := cli.NewPipelineCommand("kollect-pipeline", "test")
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// upstreamRecord is a line of upstream's --output - (ndjson).
type upstreamRecord struct {
	Context         string `json:"context"`
	TargetNamespace string `json:"targetNamespace"`
	TargetName      string `json:"targetName"`
	Path            string `json:"path"`
	Envelope        struct {
		Cluster string           `json:"cluster"`
		Items   []map[string]any `json:"items"`
	} `json:"envelope"`
}

func holdsShop(t *testing.T, rs []upstreamRecord) {
	t.Helper()
	if len(rs) != 1 {
		t.Fatalf("want one record (one target), got %d", len(rs))
	}
	r := rs[0]
	b, _ := json.Marshal(r.Envelope.Items)
	if r.Context != "test-cluster" || r.TargetNamespace != "ops" || r.TargetName != "shop" || r.Path != "inventory/ops/shop.yaml" ||
		r.Envelope.Cluster != "test-cluster" || len(r.Envelope.Items) != 2 || !strings.Contains(string(b), "web:1") || !strings.Contains(string(b), "cart:2") {
		t.Fatalf("record: %+v\nitems %s", r, b)
	}
}

// Upstream's CI scripts call collect --config DIR with --output - (and a
// --format), --output DIR or the directory's own sink: each gives what
// upstream's did.
func TestUpstreamPipelineCollect(t *testing.T) {
	kubeconfig, dir := setup(t)
	for _, format := range []string{"", "ndjson", "json", "yaml"} {
		t.Run("stdout "+format, func(t *testing.T) {
			args := []string{"collect", "--kubeconfig", kubeconfig, "--config", dir, "--output", "-"}
			if format != "" {
				args = append(args, "--format", format)
			}
			out, stderr, err := runPipeline(args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			var rs []upstreamRecord
			switch format {
			case "", "ndjson":
				for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
					var r upstreamRecord
					if err := json.Unmarshal([]byte(line), &r); err != nil {
						t.Fatalf("line %q: %v", line, err)
					}
					rs = append(rs, r)
				}
			case "json":
				err = json.Unmarshal([]byte(out), &rs)
			case "yaml":
				err = yaml.Unmarshal([]byte(out), &rs)
			}
			if err != nil {
				t.Fatalf("%s output: %v\n%s", format, err, out)
			}
			holdsShop(t, rs)
		})
	}

	t.Run("output DIR", func(t *testing.T) {
		outDir := t.TempDir()
		if _, stderr, err := runPipeline("collect", "--kubeconfig", kubeconfig, "--config", dir, "--output", outDir); err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		b, err := os.ReadFile(filepath.Join(outDir, "inventory", "ops", "shop.yaml"))
		if err != nil || !strings.Contains(string(b), "cart:2") {
			t.Fatalf("envelope file: %v\n%s", err, b)
		}
	})

	t.Run("the directory's sink", func(t *testing.T) {
		conf := copyDir(t, dir)
		bare := filepath.Join(t.TempDir(), "inventory.git")
		if out, err := exec.Command("git", "init", "--bare", "-q", "-b", "main", bare).CombinedOutput(); err != nil {
			t.Fatal(string(out))
		}
		if err := os.WriteFile(filepath.Join(conf, "sink.yml"), []byte(`apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: inventory-git, namespace: ops}
spec:
  type: git
  endpoint: file://`+bare+`
`), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, stderr, err := runPipeline("collect", "--kubeconfig", kubeconfig, "--config", conf); err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		show, err := exec.Command("git", "--git-dir", bare, "show", "main:inventory/ops/shop.yaml").CombinedOutput()
		if err != nil || !strings.Contains(string(show), "cart:2") {
			t.Fatalf("document: %v\n%s", err, show)
		}
		// And what does not go with a sink: upstream's errors, exit 2.
		for _, args := range [][]string{{"--output", "-"}, {"--output", t.TempDir()}} {
			_, _, err := runPipeline(append([]string{"collect", "--kubeconfig", kubeconfig, "--config", conf}, args...)...)
			if exitCode(err) != 2 || !strings.Contains(err.Error(), "cannot be combined with the KollectSnapshotSink") {
				t.Errorf("%v with a sink in the directory: want exit 2, got %v", args, err)
			}
		}
	})
}

func copyDir(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	b, err := os.ReadFile(filepath.Join(dir, "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(to, "pipeline.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return to
}

func TestUpstreamPipelineFlagRules(t *testing.T) {
	kubeconfig, dir := setup(t)
	twoSinks := copyDir(t, dir)
	if err := os.WriteFile(filepath.Join(twoSinks, "sinks.yaml"), []byte(`apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: a, namespace: ops}
spec: {type: git, endpoint: 'file:///nowhere/a.git'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: b, namespace: ops}
spec: {type: git, endpoint: 'file:///nowhere/b.git'}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"collect"}, "--config DIR is required"},
		{[]string{"collect", "--config", dir}, "holds no sink"},
		{[]string{"collect", "--config", dir, "--format", "json"}, "--format applies to --output - only"},
		{[]string{"collect", "--config", dir, "--output", "-", "--format", "xml"}, `--format "xml"`},
		{[]string{"collect", "--config", dir, "--output", "-", "--dry-run"}, "--dry-run cannot be combined with --output -"},
		{[]string{"collect", "--config", dir, "--output", "-", "--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"collect", "--config", twoSinks}, "holds 2 sinks"},
		{[]string{"validate"}, "--config DIR is required"},
	} {
		args := tc.args
		if args[0] == "collect" {
			args = append(args, "--kubeconfig", kubeconfig)
		}
		_, _, err := runPipeline(args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: want exit 2 saying %q, got %v", tc.args, tc.want, err)
		}
	}
}

// --log-level error keeps warnings off stderr; the default shows them.
func TestUpstreamPipelineLogLevel(t *testing.T) {
	kubeconfig, dir := setup(t)
	conf := copyDir(t, dir)
	if err := os.WriteFile(filepath.Join(conf, "other.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: unrelated, namespace: ops}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		level   string
		warning bool
	}{{"", true}, {"warn", true}, {"error", false}} {
		args := []string{"collect", "--kubeconfig", kubeconfig, "--config", conf, "--output", "-"}
		if tc.level != "" {
			args = append(args, "--log-level", tc.level)
		}
		out, stderr, err := runPipeline(args...)
		if err != nil || !strings.Contains(out, "cart:2") {
			t.Fatalf("level %q: %v\n%s", tc.level, err, stderr)
		}
		if got := strings.Contains(stderr, "warning:"); got != tc.warning {
			t.Errorf("level %q: want a warning on stderr %v, got:\n%s", tc.level, tc.warning, stderr)
		}
	}
}

func TestUpstreamPipelineValidate(t *testing.T) {
	_, dir := setup(t)
	out, stderr, err := runPipeline("validate", "--config", dir)
	if err != nil || strings.TrimSpace(out) != dir+": valid (1 profile(s), 1 target(s), 0 sink(s))" {
		t.Fatalf("valid directory: %v\n%s%s", err, out, stderr)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "target.yaml"), []byte(strings.Replace(pipelineFiles, "profileRef: deployment-images", "profileRef: ''", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err = runPipeline("validate", "--config", bad)
	if exitCode(err) != 2 || !strings.Contains(stderr, "invalid: ") || strings.Contains(out, "valid (") {
		t.Fatalf("invalid directory: want exit 2 and invalid: on stderr, got %v\n%s%s", err, out, stderr)
	}
}
