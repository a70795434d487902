//go:build integration

package helm_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/pipeline/tools/manifests"
)

// TestUpgradeFromUpstreamKeepsEveryInventoryExporting upgrades a cluster
// running upstream in place: custom resources stored under upstream's
// CRDs, upstream's values file, and the manager started as upstream's
// Deployment starts the image (/manager and flags). Every inventory must
// export, with no custom resource edited.
//
// Upstream's CRDs are not in this repository: CRDs of the same group,
// kinds, version and scope whose schema keeps every field stand in for
// them, so whatever upstream stored, they store too.
func TestUpgradeFromUpstreamKeepsEveryInventoryExporting(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	remote := filepath.Join(t.TempDir(), "inventory.git")
	if out, err := exec.Command("git", "init", "--bare", "-b", "main", remote).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}

	if err := env.StandInCRDs(ctx); err != nil {
		t.Fatal(err)
	}

	for _, ns := range []string{"shop", "payments", "kollect-system"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, d := range []*appsv1.Deployment{deployment("shop", "storefront", "shop"), deployment("shop", "cart", "shop"), deployment("shop", "debug", ""),
		deployment("payments", "api", ""), deployment("payments", "ledger", "")} {
		if err := c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	crs, err := manifests.ReadFile("testdata/upgrade/upstream-crs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]*unstructured.Unstructured{}
	for _, o := range crs {
		if spec, ok := o.Object["spec"].(map[string]any); ok && spec["endpoint"] == "REMOTE" {
			spec["endpoint"] = "file://" + remote
		}
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("store %s %s/%s under upstream's CRDs: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		if o.GetAPIVersion() == kollectv1alpha1.GroupVersion.String() {
			stored[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = o.DeepCopy()
		}
	}

	// The upgrade: the chart's CRDs, applied as helm and kubectl apply
	// --server-side do.
	if err := env.UpgradeCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	var written []*unstructured.Unstructured
	for _, o := range stored {
		written = append(written, o)
	}
	if err := env.Unedited(ctx, written); err != nil {
		t.Errorf("after the CRD upgrade: %v", err)
	}

	flags, err := testenv.ManagerFlags(render(t, "testdata/upstream-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	up, err := env.StartAsUpstream(t.TempDir(), flags)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		up.Stop()
		if t.Failed() {
			t.Logf("manager log:\n%s", up.Tail(4000))
		}
	}()
	for _, inv := range []struct{ ns, name string }{{"shop", "shop-inventory"}, {"payments", "payments-inventory"}} {
		testenv.Eventually(t, 90*time.Second, inv.ns+"/"+inv.name+" exports", func() error {
			var got kollectv1alpha1.KollectInventory
			if err := c.Get(ctx, client.ObjectKey{Namespace: inv.ns, Name: inv.name}, &got); err != nil {
				return err
			}
			ready := meta.FindStatusCondition(got.Status.Conditions, "Ready")
			if ready == nil || ready.Status != metav1.ConditionTrue || got.Status.ExportedCount == nil || *got.Status.ExportedCount != 2 {
				return fmt.Errorf("Ready %+v, exported %v", ready, got.Status.ExportedCount)
			}
			return nil
		})
	}
	out, err := exec.Command("git", "-C", remote, "ls-tree", "-r", "--name-only", "main").CombinedOutput()
	if err != nil {
		t.Fatalf("git ls-tree: %v\n%s", err, out)
	}
	files := strings.Fields(string(out))
	for _, want := range []string{"clusters/prod-west/payments/deployment/api.yaml", "clusters/prod-west/payments/deployment/ledger.yaml"} {
		if !slices.Contains(files, want) {
			t.Errorf("the remote lacks %s: %v", want, files)
		}
	}
	if !slices.ContainsFunc(files, func(f string) bool { return strings.Contains(f, "shop-inventory") }) {
		t.Errorf("the remote holds no document of shop-inventory: %v", files)
	}
	if err := env.Unedited(ctx, written); err != nil {
		t.Errorf("after the manager ran: %v", err)
	}
}

func deployment(ns, name, partOf string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	if partOf != "" {
		labels["app.kubernetes.io/part-of"] = partOf
	}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/" + name + ":1"}}}}}}
}
