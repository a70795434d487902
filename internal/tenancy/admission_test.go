//go:build integration

package tenancy_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"kollect.dev/kollect/internal/testenv"
)

// TestATenantIsRefusedAtAdmission is the same tenant with the manager
// process serving the webhooks: what the runtime would degrade is refused
// on the way in, with the message that says what to fix.
func TestATenantIsRefusedAtAdmission(t *testing.T) {
	e, err := testenv.StartWithWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := e.WriteKubeconfig(path, "tenancy-webhooks"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{"team-a", "team-b", "kollect-system"} {
		if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	startOperatorOn(t, path, nil, e.WebhookFlags()...)
	a := tenantOn(t, e, "team-a-dev", "team-a")
	b := tenantOn(t, e, "team-b-dev", "team-b")
	create := func(c client.Client, doc string) error {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		return c.Create(ctx, u)
	}
	profile := func(ns string) string {
		return fmt.Sprintf(`apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: configmaps, namespace: %s}
spec:
  targetGVK: {group: "", version: v1, kind: ConfigMap}
  attributes: [{name: colour, path: '$.data.colour', optional: true}]`, ns)
	}
	// The webhooks answer once the process serves them.
	testenv.Eventually(t, 60*time.Second, "the webhooks admit a tenant's profile", func() error {
		if err := create(b, profile("team-b")); err != nil && !strings.Contains(err.Error(), "already exists") {
			return err
		}
		return nil
	})
	refused := func(c client.Client, doc, words string) {
		t.Helper()
		err := create(c, doc)
		if err == nil || !strings.Contains(err.Error(), words) {
			t.Fatalf("want a refusal naming %q, got %v", words, err)
		}
	}
	refused(b, `apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: kube-system, namespace: team-b}
spec:
  profileRef: configmaps
  includedNamespaces: [kube-system]`, `workload namespace "kube-system" is outside the operator's default namespace ceiling`)
	if err := create(b, `apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: own, namespace: team-b}
spec:
  profileRef: configmaps
  includedNamespaces: [team-b]`); err != nil {
		t.Fatalf("a target of its own namespace is refused: %v", err)
	}

	// The platform's scope in team-a, then the tenant's own "0".
	if err := create(e.Client, `apiVersion: kollect.dev/v1alpha1
kind: KollectScope
metadata: {name: platform, namespace: team-a}
spec:
  allowedNamespaces: [team-a]`); err != nil {
		t.Fatal(err)
	}
	if err := create(a, `apiVersion: kollect.dev/v1alpha1
kind: KollectScope
metadata: {name: "0", namespace: team-a}
spec:
  allowedNamespaces: [team-a, team-b]`); err != nil {
		t.Fatalf("the tenant's scope: %v", err)
	}
	if err := create(a, profile("team-a")); err != nil {
		t.Fatal(err)
	}
	refused(a, `apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: team-b, namespace: team-a}
spec:
  profileRef: configmaps
  includedNamespaces: [team-b]`, `workload namespace "team-b" is not in KollectScope "platform" allowedNamespaces`)
}
