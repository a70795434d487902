//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// profileAndTarget declares a profile and a target of Deployments in
// namespace ns, reading the namespaces labelled team: ns.
func profileAndTarget(ns string) string {
	return fmt.Sprintf(`apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: images, namespace: %[1]s}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes: [{name: image, path: '$.spec.template.spec.containers[0].image'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: apps, namespace: %[1]s}
spec:
  profileRef: images
  namespaceSelector: {matchLabels: {team: %[1]s}}
`, ns)
}

func deleteObject(t *testing.T, kind, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kollect.dev/v1alpha1")
	if kind == "Secret" {
		u.SetAPIVersion("v1")
	}
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	if err := env.Client.Delete(context.Background(), u); err != nil {
		t.Fatalf("delete %s %s/%s: %v", kind, ns, name, err)
	}
}

func goneInventory(ns, name string) func() error {
	return func() error {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("kollect.dev/v1alpha1")
		u.SetKind("KollectInventory")
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
		if apierrors.IsNotFound(err) {
			return nil
		}
		_, r, m := condition(u, "Degraded")
		return fmt.Errorf("the inventory is still there (%v): %s %s", err, r, m)
	}
}

// A namespace deleted at once takes an inventory's sink and its Secret
// with the inventory: its cleanup still clears its rows from the shared
// database, with the backend built before they went.
func TestAnInventoryWhoseSinkAndSecretWentFirstStillClearsItsRows(t *testing.T) {
	ctx := context.Background()
	dbs := startDatabases(t)
	apply(t, namespaceYAML("nsgone", "")+"---\n"+namespaceYAML("nsgone-apps", "team: nsgone")+"---\n"+deploymentYAML("nsgone-apps", "web", "shop", "web:1"))
	apply(t, profileAndTarget("nsgone")+dbs.sinksYAML("nsgone")+`---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: inventory, namespace: nsgone}
spec:
  databaseSinkRefs: [documents]
`)
	eventually(t, 30*time.Second, "MongoDB holds the inventory's row", func() error {
		got, err := dbs.mongoImages(ctx, "nsgone", "inventory")
		if err != nil || got["web"] != "web:1" || len(got) != 1 {
			return fmt.Errorf("MongoDB holds %v (%v)", got, err)
		}
		return nil
	})
	deleteObject(t, "Secret", "nsgone", "mongo-uri")
	deleteObject(t, "KollectDatabaseSink", "nsgone", "documents")
	deleteObject(t, "KollectInventory", "nsgone", "inventory")
	eventually(t, 30*time.Second, "the inventory is gone", goneInventory("nsgone", "inventory"))
	got, err := dbs.mongoImages(ctx, "nsgone", "inventory")
	if err != nil || len(got) != 0 {
		t.Fatalf("MongoDB still holds %v of the deleted inventory (%v)", got, err)
	}
}

// A cleanup that cannot succeed (its Secret went before the manager ever
// used it) keeps the inventory, saying why, until its namespace is being
// deleted: then holding the finalizer would hold the namespace for good.
func TestATerminalCleanupDoesNotHoldANamespaceForever(t *testing.T) {
	apply(t, namespaceYAML("nsstuck", "")+"---\n"+profileAndTarget("nsstuck")+`---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: warehouse, namespace: nsstuck}
spec:
  type: postgres
  cluster: test
  postgres: {databaseRef: {name: no-such-secret}, table: inventory_items}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: inventory, namespace: nsstuck}
spec:
  databaseSinkRefs: [warehouse]
`)
	eventually(t, 20*time.Second, "the inventory has its finalizer", func() error {
		if len(get(t, "KollectInventory", "nsstuck", "inventory").GetFinalizers()) == 0 {
			return fmt.Errorf("no finalizer yet")
		}
		return nil
	})
	deleteObject(t, "KollectInventory", "nsstuck", "inventory")
	eventually(t, 20*time.Second, "the cleanup is reported terminal", func() error {
		s, r, m := condition(get(t, "KollectInventory", "nsstuck", "inventory"), "Degraded")
		if s != "True" || r != "CleanupTerminal" || !strings.Contains(m, "no-such-secret") {
			return fmt.Errorf("Degraded=%s/%s: %s", s, r, m)
		}
		return nil
	})
	if err := env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "nsstuck"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the inventory goes with its namespace", goneInventory("nsstuck", "inventory"))
}
