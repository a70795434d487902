//go:build integration

package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/pipeline/tools/cli"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

const pipelineFiles = `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: deployment-images, namespace: ops}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes:
  - {name: image, path: '$.spec.template.spec.containers[0].image'}
  - {name: replicas, path: '$.spec.replicas'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: shop, namespace: ops}
spec:
  profileRef: deployment-images
  labelSelector: {matchLabels: {app: shop}}
`

func setup(t *testing.T) (kubeconfig, dir string) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range []string{"cli-a", "cli-b"} {
		_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	for _, d := range []struct{ ns, name, app, image string }{{"cli-a", "web", "shop", "web:1"}, {"cli-b", "cart", "shop", "cart:2"}, {"cli-b", "db", "other", "db:1"}} {
		_ = env.Client.Create(ctx, deployment(d.ns, d.name, d.app, d.image))
	}
	dir = t.TempDir()
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, "test-cluster"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(pipelineFiles), 0o644); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, dir
}

func deployment(ns, name, app, image string) *appsv1.Deployment {
	lbl := map[string]string{"app": app}
	replicas := int32(2)
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}}}
}

func run(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	cmd := cli.NewCollectCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestCollectPrintsTheRowsInEveryFormat(t *testing.T) {
	kubeconfig, dir := setup(t)
	base := []string{"--kubeconfig", kubeconfig, "-f", dir}

	out, stderr, err := run(append(base, "-o", "table")...)
	if err != nil {
		t.Fatalf("table: %v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TARGET") || !strings.Contains(lines[0], "IMAGE") ||
		!strings.Contains(out, "cart:2") || !strings.Contains(out, "web:1") || strings.Contains(out, "db:1") {
		t.Errorf("table:\n%s", out)
	}
	if !strings.Contains(stderr, "collected 2 of") {
		t.Errorf("progress on stderr: %q", stderr)
	}

	out, _, err = run(append(base, "-o", "ndjson")...)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Context, TargetNamespace, TargetName, Path string
		Envelope                                   struct {
			Cluster   string `json:"cluster"`
			ItemCount int    `json:"itemCount"`
			Checksum  string `json:"checksum"`
			Items     []map[string]any
		}
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rec); err != nil {
		t.Fatalf("ndjson: %v\n%s", err, out)
	}
	if rec.Context != "test-cluster" || rec.Envelope.Cluster != "test-cluster" || rec.Envelope.ItemCount != 2 ||
		rec.Path != "inventory/ops/shop.yaml" || rec.TargetNamespace != "ops" || len(rec.Envelope.Checksum) != 64 {
		t.Errorf("ndjson record: %+v", rec)
	}

	for _, format := range []string{"json", "yaml"} {
		out, _, err = run(append(base, "-o", format)...)
		if err != nil {
			t.Fatal(err)
		}
		var recs []map[string]any
		if err := yaml.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 1 {
			t.Errorf("%s: %v\n%s", format, err, out)
		}
	}

	out, _, err = run(append(base, "-o", "table", "-n", "cli-a")...)
	if err != nil || strings.Contains(out, "cart") || !strings.Contains(out, "web") {
		t.Errorf("-n cli-a: %v\n%s", err, out)
	}
}

func TestCollectExitCodes(t *testing.T) {
	kubeconfig, dir := setup(t)
	code := func(err error) int {
		var e *cli.ExitError
		if errors.As(err, &e) {
			return e.Code
		}
		if err != nil {
			return -1
		}
		return 0
	}
	_, _, err := run("--kubeconfig", filepath.Join(dir, "missing"), "-f", dir)
	if code(err) != 2 || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("a bad kubeconfig: want exit 2 naming the kubeconfig, got %v", err)
	}
	_, _, err = run("--kubeconfig", kubeconfig, "-f", dir, "-o", "xml")
	if code(err) != 2 {
		t.Errorf("a bad -o: want exit 2, got %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "argo.yaml"), []byte(`apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: apps, namespace: ops}
spec:
  targetGVK: {group: argoproj.io, version: v1alpha1, kind: Application}
  attributes: [{name: rev, path: '$.status.sync.revision'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: argo, namespace: ops}
spec: {profileRef: apps}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	denied := filepath.Join(dir, "denied-kubeconfig")
	if err := env.WriteUserKubeconfig(denied, "nobody"); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := run("--kubeconfig", denied, "-f", filepath.Join(dir, "pipeline.yaml"))
	if code(err) != 2 || !strings.Contains(err.Error()+stderr, "forbidden") {
		t.Errorf("a user RBAC denies: want exit 2 and the API server's forbidden message, got %v\n%s", err, stderr)
	}
	out, stderr, err := run("--kubeconfig", kubeconfig, "-f", dir, "-o", "ndjson")
	if code(err) != 1 || !strings.Contains(stderr, "not served") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("an unknown kind beside a good target: want exit 1, the error on stderr and one record; got %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
}
