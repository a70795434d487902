//go:build integration

package helm_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/internal/testenv"
)

// TestTenantModeExportsOnTheChartsRolesOnly installs the RBAC the chart
// renders for a tenant install (Roles and RoleBindings only), runs the real
// manager as its service account (impersonated, so the API server applies
// exactly that RBAC) in tenant mode, and shows a team's pipeline exporting.
func TestTenantModeExportsOnTheChartsRolesOnly(t *testing.T) {
	ctx := context.Background()
	for _, ns := range []string{"kollect-system", "team-a", "team-b"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	sa := ""
	for _, o := range render(t, "testdata/tenant.yaml") {
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding":
			t.Fatalf("tenant mode renders %s %s", o.GetKind(), o.GetName())
		case "ServiceAccount":
			sa = "system:serviceaccount:" + o.GetNamespace() + ":" + o.GetName()
			fallthrough
		case "Role", "RoleBinding":
			if err := env.Client.Patch(ctx, o, client.Apply, client.FieldOwner("helm"), client.ForceOwnership); err != nil {
				t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	if sa == "" {
		t.Fatal("no ServiceAccount rendered")
	}
	bare := filepath.Join(t.TempDir(), "team-a.git")
	if out, err := exec.Command("git", "init", "--bare", "-b", "main", bare).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	apply(t, fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team-a, labels: {app: tenant}}
data: {colour: blue}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other-team, namespace: team-b, labels: {app: tenant}}
data: {colour: red}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: configmaps, namespace: team-a}
spec:
  targetGVK: {group: "", version: v1, kind: ConfigMap}
  attributes: [{name: colour, path: '$.data.colour'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: configmaps, namespace: team-a}
spec:
  profileRef: configmaps
  labelSelector: {matchLabels: {app: tenant}}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: git, namespace: team-a}
spec:
  type: git
  endpoint: file://%s
  layout: {mode: perResource, content: attributes, pathTemplate: '{sourceNamespace}/{sourceName}{extension}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: inventory, namespace: team-a}
spec:
  snapshotSinkRefs: [git]
`, bare))

	as := rest.CopyConfig(env.Config)
	as.Impersonate = rest.ImpersonationConfig{UserName: sa}
	mgr, err := env.StartManagerAs(as, "--tenant-mode", "--watch-namespaces=team-a", "--leader-elect=true",
		"--leader-election-namespace=kollect-system", "--dev-allow-loopback-sinks")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mgr.Stop(); err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	testenv.Eventually(t, 60*time.Second, "the tenant's ConfigMap is exported, and only it", func() error {
		out, err := exec.Command("git", "-C", bare, "ls-tree", "-r", "--name-only", "main").CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != "team-a/settings.yaml" {
			return fmt.Errorf("files %q (%v)", got, err)
		}
		return nil
	})
	testenv.Eventually(t, 30*time.Second, "the target and the inventory report through the tenant's Roles", func() error {
		for _, kind := range []string{"KollectTarget", "KollectInventory"} {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("kollect.dev/v1alpha1")
			u.SetKind(kind)
			name := map[string]string{"KollectTarget": "configmaps", "KollectInventory": "inventory"}[kind]
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: name}, u); err != nil {
				return err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			ready := false
			for _, c := range conds {
				m := c.(map[string]any)
				ready = ready || (m["type"] == "Ready" && m["status"] == "True")
			}
			if !ready {
				return fmt.Errorf("%s not Ready: %v", kind, conds)
			}
		}
		return nil
	})
}

// apply server-side applies a YAML stream as the administrator.
func apply(t *testing.T, docs string) {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(docs), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := env.Client.Patch(context.Background(), u, client.Apply, client.FieldOwner("test"), client.ForceOwnership); err != nil {
			t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}
