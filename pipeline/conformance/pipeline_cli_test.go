//go:build conformance

package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/pipeline/cli"
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
