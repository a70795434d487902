//go:build integration

package tenancy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"kollect.dev/kollect/internal/testenv"
)

var (
	env        *testenv.Env
	binary     string
	kubeconfig string
	logDir     string
)

// TestMain builds the operator and starts a control plane; each test
// starts the manager process it needs.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kollect-tenancy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	logDir = dir
	if binary, err = testenv.BuildOperator(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	func() {
		defer os.RemoveAll(dir)
		e, err := testenv.Start()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return
		}
		defer func() { _ = e.Stop() }()
		env = e
		kubeconfig = filepath.Join(dir, "kubeconfig")
		if err := e.WriteKubeconfig(kubeconfig, "tenancy"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return
		}
		code = m.Run()
	}()
	os.Exit(code)
}

// startOperator runs the manager process with args after the test
// presets (metrics served as the operator's defaults say unless args
// change it).
func startOperator(t *testing.T, extraEnv []string, args ...string) *testenv.Process {
	t.Helper()
	return startOperatorOn(t, kubeconfig, extraEnv, args...)
}

// startOperatorOn runs the manager process against the control plane of
// the kubeconfig at path.
func startOperatorOn(t *testing.T, path string, extraEnv []string, args ...string) *testenv.Process {
	t.Helper()
	log := filepath.Join(logDir, strings.ReplaceAll(t.Name(), "/", "_")+".log")
	p, err := testenv.StartProcess(context.Background(), testenv.ProcessOptions{Binary: binary, Kubeconfig: path, Log: log,
		Env: extraEnv, Args: append([]string{"--status-flush-interval=100ms", "--export-batch-window=50ms", "--zap-log-level=info"}, args...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("operator warnings and errors:\n%s", p.Warnings(40))
		}
		_, _ = p.Stop(10 * time.Second)
	})
	return p
}

// tenant is a client acting as user, which may do anything with
// kollect.dev objects, ConfigMaps and Secrets of its namespaces, and
// nothing else: the usual "edit everything of Kollect in my namespace"
// Role.
func tenant(t *testing.T, user string, namespaces ...string) client.Client {
	t.Helper()
	return tenantOn(t, env, user, namespaces...)
}

// tenantOn is tenant on the control plane of e.
func tenantOn(t *testing.T, e *testenv.Env, user string, namespaces ...string) client.Client {
	t.Helper()
	ctx := context.Background()
	for _, ns := range namespaces {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "kollect-tenant", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"kollect.dev"}, Resources: []string{"*"}, Verbs: []string{"*"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"*"}},
		}}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kollect-tenant-" + user, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "kollect-tenant"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
		for _, o := range []client.Object{role, binding} {
			if err := e.Client.Create(ctx, o); client.IgnoreAlreadyExists(err) != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: e.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// namespaces creates namespaces as the platform.
func namespaces(t *testing.T, names ...string) {
	t.Helper()
	for _, ns := range names {
		if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
}

// apply creates the objects of a YAML stream with c, failing the test on
// any refusal.
func apply(t *testing.T, c client.Client, docs string) {
	t.Helper()
	for _, doc := range strings.Split(docs, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("bad YAML: %v\n%s", err, doc)
		}
		if err := c.Patch(context.Background(), u, client.Apply, client.ForceOwnership, client.FieldOwner("tenancy-test")); err != nil {
			t.Fatalf("apply %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
}

// condition waits until the object's condition typ has status and
// reason, with words in its message, and returns the message.
func condition(t *testing.T, kind, ns, name, typ, status, reason, words string) string {
	t.Helper()
	var msg string
	testenv.Eventually(t, 45*time.Second, fmt.Sprintf("%s %s/%s %s=%s/%s", kind, ns, name, typ, status, reason), func() error {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("kollect.dev/v1alpha1")
		u.SetKind(kind)
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] != typ {
				continue
			}
			msg = fmt.Sprint(m["message"])
			if m["status"] == status && m["reason"] == reason && strings.Contains(msg, words) {
				return nil
			}
			return fmt.Errorf("%s=%v/%v: %s", typ, m["status"], m["reason"], msg)
		}
		return fmt.Errorf("no %s condition yet (%v)", typ, conds)
	})
	return msg
}

// counter is a loopback server that counts what it receives and answers
// every request with status.
func counter(t *testing.T, status int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// repo is a bare Git repository and a function listing its files.
func repo(t *testing.T) (string, func() ([]string, error)) {
	t.Helper()
	bare := filepath.Join(t.TempDir(), "remote.git")
	if out, err := exec.Command("git", "init", "--bare", "-q", "-b", "main", bare).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	return bare, func() ([]string, error) {
		out, err := exec.Command("git", "-C", bare, "ls-tree", "-r", "--name-only", "main").CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("%v: %s", err, out)
		}
		return strings.Fields(string(out)), nil
	}
}
