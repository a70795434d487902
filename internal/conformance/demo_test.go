//go:build conformance

package conformance_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/internal/eventually"
	"kollect.dev/kollect/internal/testenv"
)

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func shopDeployment(name, app, image string) *appsv1.Deployment {
	lbl := map[string]string{"app": app}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, Labels: lbl},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}},
	}
}

// demo is the upstream hero demo running on a control plane of its own.
type demo struct {
	c    client.Client
	bare string
}

// startDemo applies samples/demo/git-only unchanged except for the sink
// endpoint, which points at a local bare repository instead of an
// in-cluster Forgejo, and runs the manager. It gets a
// control plane of its own, so the manager never sees the other samples'
// external endpoints.
func startDemo(t *testing.T, managerArgs ...string) *demo {
	t.Helper()
	ctx := context.Background()
	demoEnv, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = demoEnv.Stop() })
	c := demoEnv.Client

	bare := filepath.Join(t.TempDir(), "inventory-demo.git")
	if out, err := git("", "init", "--bare", "-b", "main", bare); err != nil {
		t.Fatal(out)
	}
	// The sample's target lives in default and reads demo: under the
	// closed default (a target reads its own namespace) the platform grants
	// it, as docs/security.md says an upgrading install does.
	if err := c.Create(ctx, &kollectv1alpha1.KollectScope{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "platform-grants"},
		Spec: kollectv1alpha1.KollectScopeSpec{ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{AllowedNamespaces: []string{"default", "demo"}}}}); err != nil {
		t.Fatal(err)
	}
	heroDemo(t, c, bare, func(doc *unstructured.Unstructured) error {
		return c.Patch(ctx, doc, client.Apply, client.ForceOwnership, client.FieldOwner("conformance"))
	})
	mgr, err := demoEnv.StartManager(managerArgs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mgr.Stop(); err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return &demo{c: c, bare: bare}
}

// heroDemo sets up samples/demo/git-only on c: its namespace, the Secret
// and Deployments it expects, and its four sample files, written with
// write unchanged but for the sink's endpoint (the local remote bare). It
// returns the samples as written.
func heroDemo(t *testing.T, c client.Client, bare string, write func(*unstructured.Unstructured) error) []*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hero-git-credentials"},
		StringData: map[string]string{"token": "not-needed-for-a-local-remote"}}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*appsv1.Deployment{shopDeployment("storefront", "shop", "ghcr.io/example/storefront:1.4.2"),
		shopDeployment("cart", "shop", "ghcr.io/example/cart:2.0.0"), shopDeployment("grafana", "monitoring", "grafana/grafana:11")} {
		if err := c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	var written []*unstructured.Unstructured
	for _, f := range []string{"profile.yaml", "target.yaml", "sink.yaml", "inventory.yaml"} {
		docs, err := readDocs(filepath.Join(corpusDir, "samples/demo/git-only", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range docs {
			if doc.GetKind() == "KollectSnapshotSink" {
				doc.Object["spec"].(map[string]any)["endpoint"] = "file://" + bare
			}
			if err := write(doc); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			written = append(written, doc.DeepCopy())
		}
	}
	return written
}

func (d *demo) files() string {
	out, _ := git(d.bare, "ls-tree", "-r", "--name-only", "main")
	return out
}

// TestDemoGitOnlyEndToEnd runs the upstream hero demo (samples/demo/git-only),
// then its git-postgres variant on top.
func TestDemoGitOnlyEndToEnd(t *testing.T) {
	ctx := context.Background()
	d := startDemo(t, "--dev-allow-loopback-sinks")
	c, bare := d.c, d.bare
	files := d.files
	waitUntil(t, 30*time.Second, "the shop Deployments appear as per-resource files", func() bool {
		return files() == "namespaces/demo/deployment/cart.yaml\nnamespaces/demo/deployment/storefront.yaml"
	})
	if got, _ := git(bare, "show", "main:namespaces/demo/deployment/storefront.yaml"); got != "image: ghcr.io/example/storefront:1.4.2\nreplicas: 3" {
		t.Errorf("storefront.yaml:\n%s", got)
	}
	subject, _ := git(bare, "log", "-1", "--format=%s|%an <%ae>", "main")
	if !regexp.MustCompile(`^chore\(kollect-hero/default/demo-inventory\): export 2 items @ [0-9a-f]{12}\|kollect <kollect@kollect.dev>$`).MatchString(subject) {
		t.Errorf("commit: %s", subject)
	}

	// One commit per change; a deleted Deployment's file is pruned. (The
	// first export may land in one or two commits, depending on how the
	// initial list arrives; each is a whole snapshot.)
	count := func() string { n, _ := git(bare, "rev-list", "--count", "main"); return n }
	before := count()
	if err := c.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "cart"}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "the deleted Deployment's file is pruned", func() bool {
		return files() == "namespaces/demo/deployment/storefront.yaml"
	})
	afterDelete := count()
	if afterDelete != fmt.Sprint(atoi(before)+1) {
		t.Errorf("the delete: want exactly one new commit, got %s → %s", before, afterDelete)
	}
	// Unchanged data (an update that changes no attribute) makes no commit.
	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "storefront"}, &dep); err != nil {
		t.Fatal(err)
	}
	dep.Annotations = map[string]string{"touched": "yes"}
	if err := c.Update(ctx, &dep); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if again := count(); again != afterDelete {
		t.Errorf("an update that changes no attribute made a commit: %s → %s", afterDelete, again)
	}
	waitUntil(t, 10*time.Second, "the inventory reports what the sink acknowledged", func() bool {
		var inv kollectv1alpha1.KollectInventory
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo-inventory"}, &inv); err != nil {
			return false
		}
		ready := meta.FindStatusCondition(inv.Status.Conditions, "Ready")
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.Reason == "Exported" &&
			inv.Status.ExportedCount != nil && *inv.Status.ExportedCount == 1 && inv.Status.ItemCount == 1
	})

	// A new Deployment, then the git-postgres patch over this inventory.
	if err := c.Create(ctx, shopDeployment("api", "shop", "ghcr.io/example/api:3.0.0")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "the new Deployment is committed", func() bool {
		return files() == "namespaces/demo/deployment/api.yaml\nnamespaces/demo/deployment/storefront.yaml"
	})
	t.Run("GitPostgres", func(t *testing.T) { demoGitPostgres(t, d) })
	t.Run("DatabaseSamples", func(t *testing.T) { demoDatabaseSamples(t, d) })
}

func atoi(s string) int {
	n := 0
	fmt.Sscan(s, &n)
	return n
}

func waitUntil(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	eventually.True(t, timeout, what, ok)
}
