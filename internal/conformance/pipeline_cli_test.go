//go:build conformance

package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/pipeline/tools/cli"
)

// TestPipelineSamplesCollect runs `kollect collect` on each upstream
// samples/pipeline folder against the control plane.
func TestPipelineSamplesCollect(t *testing.T) {
	ensureNamespaces(t, "kollect-system", "shop")
	d := shopDeployment("collect-me", "shop", "example/shop:1")
	d.Namespace = "shop"
	if err := env.Client.Create(context.Background(), d); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, "ctx"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		dir, target string
		minItems    int
	}{
		{"deployment-images", "deployment-images", 1},
		{"git-sink", "deployment-images", 1},
		{"helm-releases", "helm-releases", 0},
		{"ingress-hosts", "ingress-hosts", 0},
		{"namespaces", "cluster-namespaces", 5},
	}
	for _, tc := range cases {
		t.Run(tc.dir, func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := cli.NewCollectCommand()
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "-f", filepath.Join(corpusDir, "samples/pipeline", tc.dir), "-o", "ndjson"})
			if err := cmd.ExecuteContext(context.Background()); err != nil {
				t.Fatalf("collect: %v\n%s", err, errOut.String())
			}
			var rec struct {
				TargetNamespace, TargetName, Path string
				Envelope                          struct {
					Cluster   string `json:"cluster"`
					ItemCount int    `json:"itemCount"`
				}
			}
			if err := json.Unmarshal([]byte(strings.TrimSpace(out.String())), &rec); err != nil {
				t.Fatalf("one ndjson record expected: %v\n%s", err, out.String())
			}
			if rec.TargetNamespace != "kollect-system" || rec.TargetName != tc.target || rec.Envelope.Cluster != "ctx" ||
				rec.Path != "inventory/kollect-system/"+tc.target+".yaml" || rec.Envelope.ItemCount < tc.minItems {
				t.Errorf("record: %+v", rec)
			}
		})
	}
}

// TestPipelineGitSinkSample runs samples/pipeline/git-sink with its sink
// (endpoint pointed at a local repository, token from the environment as
// its credentials.yaml expects): the document lands at the sample's
// pathTemplate.
func TestPipelineGitSinkSample(t *testing.T) {
	ensureNamespaces(t, "kollect-system", "shop")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, "ctx"); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(t.TempDir(), "inventory.git")
	if out, err := git("", "init", "--bare", "-q", "-b", "main", bare); err != nil {
		t.Fatal(out)
	}
	dir := t.TempDir()
	src := filepath.Join(corpusDir, "samples/pipeline/git-sink")
	for _, f := range []string{"profile.yaml", "target.yaml", "credentials.yaml", "sink.yaml"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "sink.yaml" {
			data = []byte(strings.Replace(string(data), "https://gitlab.example.com/platform-team/cluster-inventory.git", "file://"+bare, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KOLLECT_GIT_TOKEN", "token-from-ci")
	var out, errOut bytes.Buffer
	cmd := cli.NewCollectCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "-f", dir, "--sink", filepath.Join(dir, "sink.yaml")})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("collect --sink: %v\n%s", err, errOut.String())
	}
	files, _ := git(bare, "ls-tree", "-r", "--name-only", "main")
	if files != "clusters/my-cluster/kollect-system/deployment-images.yaml" {
		t.Errorf("files in the repository: %q", files)
	}
}
