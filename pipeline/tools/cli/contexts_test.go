//go:build integration

package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"kollect.dev/kollect/pipeline/tools/cli"
)

// fleetFiles select the Deployments labelled app=fleet only, so these
// tests change objects no other test counts.
const fleetFiles = `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: images, namespace: ops}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes:
  - {name: image, path: '$.spec.template.spec.containers[0].image'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: fleet, namespace: ops}
spec:
  profileRef: images
  labelSelector: {matchLabels: {app: fleet}}
`

// fleet writes a kubeconfig whose contexts prod-east, prod-west and lab
// all reach the test control plane, and unreachable one that does not,
// with the current context lab; and the fleet target's files.
func fleet(t *testing.T) (kubeconfig, dir string) {
	t.Helper()
	ctx := context.Background()
	d := deployment("cli-a", "fleet-api", "fleet", "api:1")
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), d) })
	dir = t.TempDir()
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, "lab"); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"prod-east", "prod-west"} {
		cfg.Contexts[name] = cfg.Contexts["lab"].DeepCopy()
	}
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.Contexts["unreachable"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: "admin"}
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(fleetFiles), 0o644); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, filepath.Join(dir, "fleet.yaml")
}

func exitCode(err error) int {
	var e *cli.ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

type fleetRecord struct {
	Context  string `json:"context"`
	Envelope struct {
		Cluster string `json:"cluster"`
		Items   []struct {
			Attributes map[string]any `json:"attributes"`
		} `json:"items"`
	} `json:"envelope"`
}

func records(t *testing.T, ndjson string) []fleetRecord {
	t.Helper()
	var out []fleetRecord
	for _, line := range strings.Split(strings.TrimSpace(ndjson), "\n") {
		if line == "" {
			continue
		}
		var r fleetRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		out = append(out, r)
	}
	return out
}

func TestSeveralContextsAreCollectedEachOnItsOwn(t *testing.T) {
	kubeconfig, files := fleet(t)
	for _, tc := range []struct {
		name     string
		contexts []string
		want     []string // contexts of the records, in order
		code     int
		stderr   string
	}{
		{"the current context by default", nil, []string{"lab"}, 0, ""},
		{"a glob", []string{"prod-*"}, []string{"prod-east", "prod-west"}, 0, ""},
		{"names, comma-separated and repeated, each once", []string{"lab,prod-west", "lab"}, []string{"lab", "prod-west"}, 0, ""},
		{"one unreachable: the others still collected, the worst code", []string{"prod-east", "unreachable"}, []string{"prod-east"}, 2, "[unreachable] error: context \"unreachable\": cannot reach the cluster"},
		{"a pattern that matches nothing", []string{"prod-east", "staging-*"}, nil, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--kubeconfig", kubeconfig, "-f", files, "-o", "ndjson"}
			for _, c := range tc.contexts {
				args = append(args, "--context", c)
			}
			out, stderr, err := run(args...)
			if code := exitCode(err); code != tc.code {
				t.Fatalf("exit code %d, want %d (%v)\n%s", code, tc.code, err, stderr)
			}
			if tc.want == nil {
				if !strings.Contains(err.Error(), `"staging-*" matches no context`) || out != "" {
					t.Fatalf("want nothing collected and the pattern named, got %v\n%s", err, out)
				}
				return
			}
			recs := records(t, out)
			if len(recs) != len(tc.want) {
				t.Fatalf("%d records, want %d:\n%s", len(recs), len(tc.want), out)
			}
			for i, r := range recs {
				if r.Context != tc.want[i] || r.Envelope.Cluster != tc.want[i] || len(r.Envelope.Items) != 1 || r.Envelope.Items[0].Attributes["image"] != "api:1" {
					t.Errorf("record %d: context %q cluster %q items %v, want %q with api:1", i, r.Context, r.Envelope.Cluster, r.Envelope.Items, tc.want[i])
				}
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr)
			}
		})
	}
}

func TestOutputDirRewritesOnlyWhatChanged(t *testing.T) {
	kubeconfig, files := fleet(t)
	out := t.TempDir()
	collect := func(extra ...string) string {
		t.Helper()
		stdout, stderr, err := run(append([]string{"--kubeconfig", kubeconfig, "-f", files, "--context", "prod-*", "--output-dir", out}, extra...)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		return stdout
	}
	east, west := filepath.Join(out, "prod-east", "inventory", "ops", "fleet.yaml"), filepath.Join(out, "prod-west", "inventory", "ops", "fleet.yaml")
	read := func(p string) []byte {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if s := collect(); strings.Count(s, "wrote ") != 2 {
		t.Fatalf("first run: want two files written, got:\n%s", s)
	}
	first := read(east)
	var env struct {
		Cluster string `json:"cluster"`
	}
	if err := json.Unmarshal(read(west), &env); err != nil || env.Cluster != "prod-west" {
		t.Fatalf("%s: cluster %q (%v), want prod-west", west, env.Cluster, err)
	}
	// Nothing changed: the files keep their bytes (and export time).
	if s := collect(); strings.Count(s, "unchanged ") != 2 || !bytes.Equal(read(east), first) {
		t.Fatalf("an unchanged cluster rewrote files:\n%s", s)
	}
	// A change, first as a dry run: reported, nothing written.
	setImage(t, "cli-a", "fleet-api", "api:2")
	if s := collect("--dry-run"); strings.Count(s, "dry run: would write ") != 2 || !bytes.Equal(read(east), first) {
		t.Fatalf("--dry-run wrote or did not report:\n%s", s)
	}
	if s := collect(); strings.Count(s, "wrote ") != 2 || !bytes.Contains(read(east), []byte(`"api:2"`)) {
		t.Fatalf("a change was not written:\n%s\n%s", s, read(east))
	}
	if entries, _ := os.ReadDir(filepath.Dir(east)); len(entries) != 1 {
		t.Errorf("%s holds %d entries, want the one file (no temporary left)", filepath.Dir(east), len(entries))
	}
}

func TestDryRunAndDestinationFlags(t *testing.T) {
	kubeconfig, files := fleet(t)
	bare := filepath.Join(t.TempDir(), "inventory.git")
	if out, err := exec.Command("git", "init", "--bare", "-q", "-b", "main", bare).CombinedOutput(); err != nil {
		t.Fatal(string(out))
	}
	sinkFile := func(cluster, path string) string {
		p := filepath.Join(t.TempDir(), "sink.yaml")
		body := "apiVersion: kollect.dev/v1alpha1\nkind: KollectSnapshotSink\nmetadata: {name: git, namespace: ops}\nspec:\n  type: git\n  endpoint: file://" + bare + "\n"
		if cluster != "" {
			body += "  cluster: " + cluster + "\n"
		}
		if path != "" {
			body += "  pathTemplate: " + path + "\n"
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := []string{"--kubeconfig", kubeconfig, "-f", files}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"--dry-run without a destination", []string{"--dry-run"}, "--dry-run needs --sink or --output-dir"},
		{"two destinations", []string{"--sink", sinkFile("", ""), "--output-dir", t.TempDir()}, "exclude each other"},
		{"spec.cluster with several contexts", []string{"--sink", sinkFile("lab", ""), "--context", "prod-*"}, `spec.cluster "lab" and --context matches 2 contexts`},
		{"one path for several contexts", []string{"--sink", sinkFile("", ""), "--context", "prod-*"}, "its paths must contain {cluster}"},
		{"--watch with several contexts", []string{"--watch", "--context", "prod-*"}, "--watch follows one context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := run(append(base, tc.args...)...)
			if exitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want exit 2 with %q, got %v", tc.want, err)
			}
		})
	}
	// A dry run against the Git sink reports each context's export and
	// commits nothing.
	perCluster := sinkFile("", "clusters/{cluster}/{namespace}/{name}.yaml")
	out, stderr, err := run(append(base, "--sink", perCluster, "--context", "prod-*", "--dry-run")...)
	if err != nil || strings.Count(out, "dry run: would export ops/fleet (1 rows") != 2 || !strings.Contains(out, `cluster "prod-west"`) {
		t.Fatalf("dry run: %v\n%s\n%s", err, out, stderr)
	}
	if n, err := exec.Command("git", "--git-dir", bare, "rev-list", "--all", "--count").CombinedOutput(); err != nil || strings.TrimSpace(string(n)) != "0" {
		t.Fatalf("a dry run committed: %s %v", n, err)
	}
	// The real run: one document per context, under each context's name.
	if _, stderr, err := run(append(base, "--sink", perCluster, "--context", "prod-*")...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, c := range []string{"prod-east", "prod-west"} {
		show, err := exec.Command("git", "--git-dir", bare, "show", "main:clusters/"+c+"/ops/fleet.yaml").CombinedOutput()
		if err != nil || !bytes.Contains(show, []byte("image: api:1")) {
			t.Fatalf("git show %s: %v\n%s", c, err, show)
		}
	}
}
