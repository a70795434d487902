//go:build integration

package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/internal/eventually"
	"kollect.dev/kollect/pipeline/tools/manifests"
	"kollect.dev/kollect/pipeline/tools/validate"
)

const examples = "../../../docs/examples"

// applyFile creates every object of a manifest file (dry-run only: the
// server validates them, strictly, and stores nothing).
func applyFile(t *testing.T, file string, opts ...client.CreateOption) {
	t.Helper()
	objs, err := manifests.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := env.Client.Create(context.Background(), o, opts...); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: %s %s: %v", file, o.GetKind(), o.GetName(), err)
		}
	}
}

// TestExamplesCollectWhatTheySay: every example in docs/examples is valid
// offline; each catalogue example, collected with kollect collect against
// a cluster holding one object of its kind, gives the attributes its
// comments promise; the tenant and fleet setups apply to the API server
// (dry run, strict fields).
func TestExamplesCollectWhatTheySay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(examples, "*.yaml"))
	if err != nil || len(files) < 8 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		res, err := validate.Paths(context.Background(), []string{f})
		if err != nil {
			t.Fatal(err)
		}
		if res.Invalid() {
			t.Errorf("%s: %v", f, res.Problems)
		}
	}

	ctx := context.Background()
	kubeconfig, _ := setup(t)
	applyFile(t, "testdata/thirdparty-crds.yaml")
	for _, ns := range []string{"shop", "argocd", "flux-system", "team-a", "kollect-system"} {
		_ = env.Client.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}})
	}
	// The third-party kinds are served once their CRDs are established.
	eventually.Check(t, 30*time.Second, "the stand-in CRDs served", func() error {
		var l unstructured.UnstructuredList
		l.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
		l.SetKind("KustomizationList")
		return env.Client.List(ctx, &l)
	})
	applyFile(t, filepath.Join(examples, "manifests", "cluster.yaml"))

	for _, tc := range []struct {
		file string
		want map[string][]string // Kind/name → JSON fragments of its row
	}{
		{"deployments-images.yaml", map[string][]string{"Deployment/storefront": {`"replicas":3`, `"pinned":false`,
			`"images":["registry.example.com/storefront@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","envoyproxy/envoy:v1.31"]`}}},
		{"ingress-services.yaml", map[string][]string{"Ingress/storefront": {`"hosts":["shop.example.com"]`, `"backends":[["storefront"]]`, `"class":"nginx"`, `"tls":true`},
			"Service/storefront": {`"ports":["80/TCP","443/TCP"]`, `"type":"ClusterIP"`}}},
		{"cert-manager-certificates.yaml", map[string][]string{"Certificate/shop-tls": {`"notAfter":"2027-03-01T00:00:00Z"`, `"ready":"True"`, `"issuer":"ClusterIssuer/letsencrypt"`}}},
		{"argocd-applications.yaml", map[string][]string{"Application/storefront": {`"sync":"Synced"`, `"health":"Healthy"`, `"destination":"shop"`, `"revision":"4f2c1ab"`}}},
		{"flux-kustomizations.yaml", map[string][]string{"Kustomization/apps": {`"source":"GitRepository/flux-system"`, `"applied":"main@sha1:9b1e"`, `"ready":"True"`}}},
		{"helm-releases.yaml", map[string][]string{"Secret/sh.helm.release.v1.storefront.v3": {`"chart":"storefront"`, `"chartVersion":"1.4.2"`, `"status":"deployed"`, `"revision":3`}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			out, stderr, err := run("--kubeconfig", kubeconfig, "-f", filepath.Join(examples, tc.file), "-o", "ndjson")
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			if strings.Contains(out, "not-exported") {
				t.Fatal("a Helm release's values reached a row")
			}
			for name, fragments := range tc.want {
				row := findRow(t, out, name)
				for _, f := range fragments {
					if !strings.Contains(row, f) {
						t.Errorf("%s: row of %s lacks %s:\n%s", tc.file, name, f, row)
					}
				}
			}
		})
	}

	for _, f := range []string{"tenant.yaml", "fleet.yaml"} {
		applyFile(t, filepath.Join(examples, f), client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))
	}
}

// findRow returns the JSON of the row of object kindName (Kind/name) in
// ndjson records.
func findRow(t *testing.T, ndjson, kindName string) string {
	t.Helper()
	kind, name, _ := strings.Cut(kindName, "/")
	for _, line := range strings.Split(strings.TrimSpace(ndjson), "\n") {
		var rec struct {
			Envelope struct {
				Items []json.RawMessage `json:"items"`
			} `json:"envelope"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		for _, it := range rec.Envelope.Items {
			if strings.Contains(string(it), fmt.Sprintf(`"name":%q`, name)) && strings.Contains(string(it), fmt.Sprintf(`"kind":%q`, kind)) {
				return string(it)
			}
		}
	}
	t.Fatalf("no row of %s in:\n%s", kindName, ndjson)
	return ""
}

// kollect collect --from DIR reads a folder of manifests as a cluster: the
// examples' profiles give the same rows over the files as over the API
// server, objects outside the target's namespaces are left out, and a
// manifest without a namespace lands in -n (default "default").
func TestCollectFromManifests(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"shop/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: storefront, namespace: shop}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - {name: web, image: 'registry.example.com/storefront:2.0'}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: elsewhere, namespace: other}
spec:
  replicas: 1
  template: {spec: {containers: [{name: c, image: 'other:1'}]}}
`,
		"rendered/chart.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: cart}
spec:
  replicas: 2
  template: {spec: {containers: [{name: c, image: 'cart:1.1'}]}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated}
data: {a: b}
`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	example := filepath.Join(examples, "deployments-images.yaml")
	from := filepath.Join(dir, "shop") + "," + filepath.Join(dir, "rendered")

	out, stderr, err := run("-f", example, "--from", from, "-o", "ndjson")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	row := findRow(t, out, "Deployment/storefront")
	if !strings.Contains(row, `"images":["registry.example.com/storefront:2.0"]`) || !strings.Contains(row, `"replicas":3`) {
		t.Errorf("row over the files:\n%s", row)
	}
	if strings.Contains(out, "elsewhere") || strings.Contains(out, `"name":"cart"`) {
		t.Errorf("objects outside namespace shop were collected:\n%s", out)
	}
	var rec struct {
		Context  string `json:"context"`
		Envelope struct {
			Cluster string `json:"cluster"`
		} `json:"envelope"`
	}
	_ = json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &rec)
	if rec.Context != "manifests" || rec.Envelope.Cluster != "manifests" {
		t.Errorf("record context %q, envelope cluster %q; want manifests", rec.Context, rec.Envelope.Cluster)
	}

	// The same files give the same rows (a manifest's UID is derived from
	// its name), so two runs diff cleanly.
	again, _, err := run("-f", example, "--from", from, "-o", "ndjson")
	if err != nil || findRow(t, again, "Deployment/storefront") != row {
		t.Errorf("a second run over the same files changed the row: %v\n%s", err, again)
	}

	// A manifest without a namespace is in -n's namespace.
	out, stderr, err = run("-f", example, "--from", from, "-n", "shop", "-o", "ndjson")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if row := findRow(t, out, "Deployment/cart"); !strings.Contains(row, `"namespace":"shop"`) || !strings.Contains(row, `"cart:1.1"`) {
		t.Errorf("a manifest without a namespace, with -n shop:\n%s", row)
	}

	// Files are not a cluster.
	for _, args := range [][]string{{"--watch"}, {"--context", "prod"}, {"--kubeconfig", "/dev/null"}} {
		_, _, err := run(append([]string{"-f", example, "--from", from}, args...)...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), "--from reads manifests") {
			t.Errorf("--from with %v: want exit 2, got %v", args, err)
		}
	}
}

// Several targets into one file-per-row Git sink: each target is its own
// inventory there, and one's export never removes another's files (a
// backend shared by the targets took each export for the previous
// target's next one).
func TestSeveralTargetsIntoOneGitSinkKeepEachOthersFiles(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "inventory.git")
	if out, err := exec.Command("git", "init", "--bare", "-q", "-b", "main", bare).CombinedOutput(); err != nil {
		t.Fatal(string(out))
	}
	sink := filepath.Join(t.TempDir(), "sink.yaml")
	if err := os.WriteFile(sink, []byte(`apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: inventory, namespace: shop}
spec:
  type: git
  endpoint: file://`+bare+`
  layout: {mode: perResource, content: attributes}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--from", filepath.Join(examples, "manifests"), "--sink", sink}
	for _, f := range []string{"deployments-images.yaml", "ingress-services.yaml", "helm-releases.yaml"} {
		args = append(args, "-f", filepath.Join(examples, f))
	}
	for range 2 { // the second run finds everything in place: no commit
		if out, stderr, err := run(args...); err != nil || !strings.Contains(out, "exported 4 target(s)") {
			t.Fatalf("%v\n%s%s", err, out, stderr)
		}
	}
	files, err := exec.Command("git", "--git-dir", bare, "ls-tree", "-r", "--name-only", "main").CombinedOutput()
	if err != nil {
		t.Fatal(string(files))
	}
	want := "manifests/shop/deployment/storefront.yaml\nmanifests/shop/ingress/storefront.yaml\n" +
		"manifests/shop/secret/sh.helm.release.v1.storefront.v3.yaml\nmanifests/shop/service/storefront.yaml\n"
	if string(files) != want {
		t.Errorf("the repository holds:\n%s\nwant:\n%s", files, want)
	}
	if n, _ := exec.Command("git", "--git-dir", bare, "rev-list", "--count", "main").Output(); strings.TrimSpace(string(n)) != "4" {
		t.Errorf("%s commits, want one per target and none for the unchanged second run", n)
	}
}
