//go:build integration

package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A profile reading a Secret's annotations must not carry what
// `kubectl apply` copied into them (the Secret's data, in
// last-applied-configuration) nor managedFields; and what --output-dir
// writes is the user's alone.
func TestCollectLeaksNoCopiesAndWritesPrivateFiles(t *testing.T) {
	kubeconfig, _ := setup(t)
	ctx := context.Background()
	_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cli-leak"}})
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "cli-leak", Name: "db", Labels: map[string]string{"app": "leak"},
		Annotations: map[string]string{"owner": "team-a",
			"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"aHVudGVyMg=="},"stringData":{"password":"hunter2"}}`}},
		StringData: map[string]string{"password": "hunter2"}}
	if err := env.Client.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	manifests := `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: secret-owners, namespace: cli-leak}
spec:
  targetGVK: {group: "", version: v1, kind: Secret}
  attributes:
  - {name: annotations, path: '$.metadata.annotations'}
  - {name: managed, path: '$.metadata.managedFields', optional: true}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: secret-owners, namespace: cli-leak}
spec:
  profileRef: secret-owners
  includedNamespaces: [cli-leak]
  labelSelector: {matchLabels: {app: leak}}
`
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(manifests), 0o600); err != nil {
		t.Fatal(err)
	}
	outDir := filepath.Join(t.TempDir(), "out")
	out, stderr, err := run("--kubeconfig", kubeconfig, "-f", dir, "-o", "ndjson")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(out, "team-a") {
		t.Fatalf("the row lacks the annotation it asked for:\n%s", out)
	}
	for _, leak := range []string{"hunter2", "aHVudGVyMg", "last-applied", "manager"} {
		if strings.Contains(out, leak) {
			t.Errorf("the row carries %q:\n%s", leak, out)
		}
	}
	if _, stderr, err := run("--kubeconfig", kubeconfig, "-f", dir, "--output-dir", outDir); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	files := 0
	err = filepath.Walk(outDir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if info.IsDir() {
			if p == outDir {
				return nil
			}
			want = 0o700
		} else {
			files++
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", p, info.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("walk %s: %v (%d files)", outDir, err, files)
	}
}
