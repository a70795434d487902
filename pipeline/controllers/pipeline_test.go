//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func deploymentYAML(ns, name, app, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[2]s, namespace: %[1]s, labels: {app: %[3]s}}
spec:
  replicas: 2
  selector: {matchLabels: {app: %[3]s}}
  template:
    metadata: {labels: {app: %[3]s}}
    spec: {containers: [{name: app, image: "%[4]s"}]}
`, ns, name, app, image)
}

func namespaceYAML(name string, labels string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {%s}}\n", name, labels)
}

// pipelineYAML is our own Git pipeline: profile, target, sink, inventory.
func pipelineYAML(ns, remote string) string {
	return fmt.Sprintf(`apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: deployment-images, namespace: %[1]s}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes:
  - {name: image, path: '$.spec.template.spec.containers[0].image'}
  - {name: replicas, path: '$.spec.replicas'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: shop-deployments, namespace: %[1]s}
spec:
  profileRef: deployment-images
  namespaceSelector: {matchLabels: {team: shop}}
  labelSelector: {matchLabels: {app: shop}}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: git, namespace: %[1]s}
spec:
  type: git
  endpoint: file://%[2]s
  cluster: test
  serialization: {format: yaml}
  layout: {mode: perResource, content: attributes, pathTemplate: 'namespaces/{sourceNamespace}/{kind}/{sourceName}{extension}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: inventory, namespace: %[1]s}
spec:
  snapshotSinkRefs: [git]
`, ns, remote)
}

func TestGitPipelineEndToEnd(t *testing.T) {
	ctx := context.Background()
	bare := filepath.Join(t.TempDir(), "inventory.git")
	bareRepo(t, bare)
	want := files(bare)
	apply(t, namespaceYAML("pipeline", "")+"---\n"+namespaceYAML("shop-a", "team: shop")+"---\n"+namespaceYAML("shop-b", "team: other"))
	apply(t, deploymentYAML("shop-a", "storefront", "shop", "shop:1.0")+"---\n"+deploymentYAML("shop-a", "cart", "shop", "cart:1.0")+
		"---\n"+deploymentYAML("shop-a", "admin", "internal", "admin:1.0")+"---\n"+deploymentYAML("shop-b", "checkout", "shop", "checkout:1.0"))
	apply(t, pipelineYAML("pipeline", bare))

	eventually(t, 30*time.Second, "selected Deployments appear in Git", want(
		"namespaces/shop-a/deployment/cart.yaml", "namespaces/shop-a/deployment/storefront.yaml"))
	if got, _ := git(bare, "show", "main:namespaces/shop-a/deployment/storefront.yaml"); got != "image: shop:1.0\nreplicas: 2" {
		t.Errorf("storefront file:\n%s", got)
	}
	eventually(t, 10*time.Second, "target and inventory report what is collected and acknowledged", func() error {
		tgt := get(t, "KollectTarget", "pipeline", "shop-deployments")
		if s, r, _ := condition(tgt, "Ready"); s != "True" || r != "Collecting" {
			return fmt.Errorf("target Ready=%s/%s", s, r)
		}
		if n, _, _ := unstructured.NestedInt64(tgt.Object, "status", "collectedCount"); n != 2 {
			return fmt.Errorf("target collectedCount %d", n)
		}
		inv := get(t, "KollectInventory", "pipeline", "inventory")
		if s, r, m := condition(inv, "Ready"); s != "True" || r != "Exported" {
			return fmt.Errorf("inventory Ready=%s/%s %s", s, r, m)
		}
		exports, _, _ := unstructured.NestedSlice(inv.Object, "status", "sinkExports")
		if len(exports) != 1 {
			return fmt.Errorf("sinkExports %v", exports)
		}
		e := exports[0].(map[string]any)
		if e["name"] != "snapshot/git" || fmt.Sprint(e["exportedCount"]) != "2" || e["lastChecksum"] == nil || e["circuit"] != "Closed" {
			return fmt.Errorf("sinkExports[0] %v", e)
		}
		return nil
	})

	// An image change: exactly one new commit, whose diff is that line.
	before, _ := git(bare, "rev-list", "--count", "main")
	var d appsv1.Deployment
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "shop-a", Name: "storefront"}, &d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "shop:1.1"
	if err := env.Client.Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the image change is committed", func() error {
		if diff, _ := git(bare, "diff", "main~1", "main"); !strings.Contains(diff, "+image: shop:1.1") {
			return fmt.Errorf("diff: %s", diff)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond) // nothing else may follow
	after, _ := git(bare, "rev-list", "--count", "main")
	diff, _ := git(bare, "diff", "--unified=0", "main~1", "main")
	if after != fmt.Sprint(atoi(before)+1) || strings.Count(diff, "\n+") != 2 || strings.Count(diff, "\n-") != 2 {
		t.Errorf("want one commit changing one line (%s → %s commits):\n%s", before, after, diff)
	}

	// A deleted Deployment: its file is removed.
	if err := env.Client.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop-a", Name: "cart"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a deleted Deployment's file is removed", want("namespaces/shop-a/deployment/storefront.yaml"))

	// A namespace that starts matching the selector: its objects appear.
	var ns corev1.Namespace
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "shop-b"}, &ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels["team"] = "shop"
	if err := env.Client.Update(ctx, &ns); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a namespace that starts matching contributes its objects", want(
		"namespaces/shop-a/deployment/storefront.yaml", "namespaces/shop-b/deployment/checkout.yaml"))

	// A second target in the same namespace: its rows join the inventory.
	apply(t, `apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: internal, namespace: pipeline}
spec:
  profileRef: deployment-images
  labelSelector: {matchLabels: {app: internal}}
`)
	eventually(t, 10*time.Second, "a second target's rows join the same inventory", want(
		"namespaces/shop-a/deployment/admin.yaml", "namespaces/shop-a/deployment/storefront.yaml", "namespaces/shop-b/deployment/checkout.yaml"))

	// The commits carry the upstream subject and author.
	if log, _ := git(bare, "log", "-1", "--format=%s|%an <%ae>", "main"); !strings.HasPrefix(log, "chore(test/pipeline/inventory): export 3 items @ ") ||
		!strings.HasSuffix(log, "|kollect <kollect@kollect.dev>") {
		t.Errorf("commit subject/author: %s", log)
	}

	// The actor engine and the controllers are observable.
	m := scrape(t)
	for _, series := range []string{`kollect_actor_mailbox_depth{actor="target"`, `kollect_actor_mailbox_depth{actor="inventory"`,
		`kollect_actor_mailbox_depth{actor="sink"`, `kollect_actor_messages_processed_total{actor="target"}`,
		`kollect_informer_objects{group="apps",resource="deployments",version="v1"}`, "kollect_export_duration_seconds_bucket",
		"kollect_collect_items_total", `kollect_reconcile_total{controller="kollecttarget",result="success"}`,
		`kollect_reconcile_duration_seconds_count{controller="kollectinventory"}`, "kollect_collect_dispatch_queue_depth",
		"kollect_collect_dispatch_backpressure_total 0", "kollect_collect_dispatch_duration_seconds_count"} {
		if !strings.Contains(m, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
}

func atoi(s string) int {
	n := 0
	_, _ = fmt.Sscan(s, &n)
	return n
}
