//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"kollect.dev/kollect/internal/testenv"
)

var (
	env         *testenv.Env
	metricsAddr string
)

// TestMain starts a control plane and the real manager once for the
// package, as an operator deployment would run it: a single-tenant one
// (--namespace-ceiling=all), since these pipelines collect across
// namespaces without scopes. The closed default has its own tests
// (tenancy_test.go). Profile series keep their attribute labels
// (--metrics-attribute-labels), which series_test.go reads.
func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mgr, err := env.StartManager("--dev-allow-loopback-sinks", "--namespace-ceiling=all", "--metrics-attribute-labels")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	metricsAddr = mgr.MetricsAddr
	code := m.Run()
	if err := mgr.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		code = 1
	}
	_ = env.Stop()
	os.Exit(code)
}

// apply creates or replaces the objects of a YAML stream (documents split
// by ---), as kubectl apply --server-side does.
func apply(t *testing.T, docs string) {
	t.Helper()
	for _, doc := range strings.Split(docs, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("bad YAML: %v\n%s", err, doc)
		}
		err := env.Client.Patch(context.Background(), u, client.Apply, client.ForceOwnership,
			client.FieldOwner("test"), client.FieldValidation(metav1.FieldValidationStrict))
		if err != nil {
			t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	testenv.Eventually(t, timeout, what, check)
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func bareRepo(t *testing.T, path string) {
	t.Helper()
	if out, err := git("", "init", "--bare", "-b", "main", path); err != nil {
		t.Fatal(out)
	}
	// The shared manager may still be pushing to it when the test ends (a
	// push to a local remote runs to its end): remove it before the test's
	// temporary directory is, retrying while git writes into it.
	t.Cleanup(func() {
		for range 25 {
			if os.RemoveAll(path) == nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

func files(bare string) func(want ...string) func() error {
	return func(want ...string) func() error {
		return func() error {
			got, err := git(bare, "ls-tree", "-r", "--name-only", "main")
			if err != nil {
				return fmt.Errorf("%v: %s", err, got)
			}
			if got != strings.Join(want, "\n") {
				return fmt.Errorf("files:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
			return nil
		}
	}
}

func get(t *testing.T, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kollect.dev/v1alpha1")
	u.SetKind(kind)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatalf("get %s %s/%s: %v", kind, ns, name, err)
	}
	return u
}

// condition returns status/reason/message of a condition, or "" values.
func condition(u *unstructured.Unstructured, typ string) (string, string, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", "", ""
}

func scrape(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
