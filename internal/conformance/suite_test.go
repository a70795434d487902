//go:build conformance

package conformance_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/pipeline/admission"
)

var (
	env       *testenv.Env
	corpusDir string
)

func TestMain(m *testing.M) {
	dir, err := findCorpus()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	corpusDir = dir
	// The samples are applied through Kollect's validating webhooks, as a
	// chart install serves them (the controllers do not run here: they
	// would probe the public hosts the samples name).
	env, err = testenv.StartWithWebhooks()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stop, err := env.ServeWebhooks(admission.Options{Policy: endpoint.Policy{AllowPrivate: true}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	stop()
	_ = env.Stop()
	os.Exit(code)
}

// findCorpus resolves CONFORMANCE_DIR, defaulting to ../shared/conformance
// beside the repository.
func findCorpus() (string, error) {
	dir := os.Getenv("CONFORMANCE_DIR")
	if dir == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "..", "shared", "conformance")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("conformance corpus: %w", err)
	}
	if st, err := os.Stat(filepath.Join(dir, "samples")); err != nil || !st.IsDir() {
		return "", fmt.Errorf("conformance corpus not found at %s (want a folder with samples/ and examples/): set CONFORMANCE_DIR to the upstream corpus", dir)
	}
	return dir, nil
}

// corpusFiles lists every YAML file under samples/ and examples/.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, top := range []string{"examples", "samples"} {
		err := filepath.WalkDir(filepath.Join(corpusDir, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				rel, _ := filepath.Rel(corpusDir, path)
				files = append(files, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(files)
	return files
}

// readDocs splits a file into its objects.
func readDocs(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) > 0 {
			docs = append(docs, u)
		}
	}
}

// apply server-side applies obj with strict field validation, as
// `kubectl apply --server-side` does: unknown fields are errors, not
// silently pruned.
func apply(ctx context.Context, obj *unstructured.Unstructured) error {
	return env.Client.Patch(ctx, obj, client.Apply, client.ForceOwnership,
		client.FieldOwner("conformance"), client.FieldValidation(metav1.FieldValidationStrict))
}

func ensureNamespaces(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if err := env.Client.Create(context.Background(), ns); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
}

func get(t *testing.T, apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		t.Fatalf("get %s %s/%s: %v", kind, namespace, name, err)
	}
	return u
}

// TestWebhooksAreServed: the samples above were applied through the
// webhooks, which do refuse what only they check.
func TestWebhooksAreServed(t *testing.T) {
	ensureNamespaces(t, "webhook-check")
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kollectAPI, "kind": "KollectProfile",
		"metadata": map[string]any{"name": "secret-data", "namespace": "webhook-check"},
		"spec": map[string]any{"targetGVK": map[string]any{"group": "", "version": "v1", "kind": "Secret"},
			"attributes": []any{map[string]any{"name": "password", "path": "$.data.password"}}},
	}}
	err := apply(context.Background(), u)
	if err == nil || !strings.Contains(err.Error(), "kollect.dev/allow-secret-extraction") {
		t.Fatalf("want the webhook's Secret guard, got %v", err)
	}
}
