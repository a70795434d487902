//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A target whose CEL does not compile is Degraded on its own; its
// inventory keeps what it exported and exports nothing more until the
// target can list (exporting without it would delete its rows from the
// sinks after a restart), and says so.
func TestInvalidCELDegradesItsTargetAndHoldsOnlyItself(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "inventory.git")
	bareRepo(t, bare)
	apply(t, namespaceYAML("cel", "")+"---\n"+namespaceYAML("cel-apps", "team: cel")+"---\n"+deploymentYAML("cel-apps", "web", "shop", "web:1"))
	apply(t, strings.ReplaceAll(pipelineYAML("cel", bare), "team: shop", "team: cel"))
	eventually(t, 20*time.Second, "the healthy target exports", files(bare)("namespaces/cel-apps/deployment/web.yaml"))
	apply(t, `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: broken, namespace: cel}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes:
  - {name: ready, path: 'cel:object.status.readyReplicas >'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: broken, namespace: cel}
spec:
  profileRef: broken
  namespaceSelector: {matchLabels: {team: nobody}}
`)
	eventually(t, 20*time.Second, "the target with invalid CEL is Degraded with the CEL error", func() error {
		s, r, m := condition(get(t, "KollectTarget", "cel", "broken"), "Degraded")
		if s != "True" || r != "ExtractionFailed" || !strings.Contains(m, `attribute "ready"`) || !strings.Contains(m, "invalid CEL") {
			return fmt.Errorf("Degraded=%s/%s: %s", s, r, m)
		}
		return nil
	})
	degradedSeries := `kollect_degraded{kind="KollectTarget",name="broken",namespace="cel",reason="ExtractionFailed"} 1`
	eventually(t, 10*time.Second, "/metrics shows the target Degraded", func() error {
		if !strings.Contains(scrape(t), degradedSeries) {
			return fmt.Errorf("no %s", degradedSeries)
		}
		return nil
	})
	apply(t, deploymentYAML("cel-apps", "api", "shop", "api:1"))
	eventually(t, 20*time.Second, "the inventory says which target it holds", func() error {
		s, r, m := condition(get(t, "KollectInventory", "cel", "inventory"), "Synced")
		if s != "False" || r != "WaitingForTargets" || !strings.Contains(m, "holding the rows of 1 target(s)") || !strings.Contains(m, "KollectTarget:cel/broken") {
			return fmt.Errorf("Synced=%s/%s: %s", s, r, m)
		}
		return nil
	})
	// The broken target holds only itself: the healthy one's change is
	// exported while it is still degraded.
	eventually(t, 20*time.Second, "the healthy target's change is exported beside the degraded one", files(bare)("namespaces/cel-apps/deployment/api.yaml", "namespaces/cel-apps/deployment/web.yaml"))
	if s, _, _ := condition(get(t, "KollectTarget", "cel", "broken"), "Degraded"); s != "True" {
		t.Fatalf("the broken target healed on its own (Degraded=%s): the test no longer tests a target that cannot list", s)
	}
	// Fixing the profile heals the target, and the inventory catches up.
	apply(t, `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: broken, namespace: cel}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes:
  - {name: ready, path: 'cel:has(object.status.readyReplicas) ? object.status.readyReplicas : 0'}
`)
	eventually(t, 20*time.Second, "the fixed target becomes Ready", func() error {
		tgt := get(t, "KollectTarget", "cel", "broken")
		if s, _, m := condition(tgt, "Ready"); s != "True" {
			return fmt.Errorf("Ready=%s %s; Degraded: %v", s, m, fmt.Sprint(condition(tgt, "Degraded")))
		}
		if strings.Contains(scrape(t), `kollect_degraded{kind="KollectTarget",name="broken"`) {
			return fmt.Errorf("/metrics still shows the healed target Degraded")
		}
		return nil
	})
	eventually(t, 20*time.Second, "the inventory is synced once every target listed", func() error {
		if s, r, m := condition(get(t, "KollectInventory", "cel", "inventory"), "Synced"); s != "True" {
			return fmt.Errorf("Synced=%s/%s: %s", s, r, m)
		}
		return nil
	})
}

func TestTargetOfAnUninstalledKindRecoversWhenItsCRDArrives(t *testing.T) {
	apply(t, namespaceYAML("widgets", "")+`---
apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: widgets, namespace: widgets}
spec:
  targetGVK: {group: example.com, version: v1, kind: Widget}
  attributes: [{name: size, path: '$.spec.size'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: widgets, namespace: widgets}
spec: {profileRef: widgets}
`)
	eventually(t, 20*time.Second, "the target is Degraded/InformerRegistrationFailed", func() error {
		s, r, m := condition(get(t, "KollectTarget", "widgets", "widgets"), "Degraded")
		if s != "True" || r != "InformerRegistrationFailed" || !strings.Contains(m, "Widget") {
			return fmt.Errorf("Degraded=%s/%s: %s", s, r, m)
		}
		return nil
	})
	apply(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`)
	eventually(t, 40*time.Second, "the CRD serves before the widget is created", func() error {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w1", "namespace": "widgets"}, "spec": map[string]any{"size": 3}}}
		return env.Client.Create(t.Context(), u)
	})
	eventually(t, 40*time.Second, "the target recovers on its own and collects the widget", func() error {
		tgt := get(t, "KollectTarget", "widgets", "widgets")
		n, _, _ := unstructured.NestedInt64(tgt.Object, "status", "collectedCount")
		if s, _, m := condition(tgt, "Ready"); s != "True" || n != 1 {
			return fmt.Errorf("Ready=%s (%s), collectedCount %d", s, m, n)
		}
		return nil
	})
}

func TestUnreachableRemoteOpensTheCircuitAndCatchesUp(t *testing.T) {
	remote := filepath.Join(t.TempDir(), "later.git") // does not exist yet
	apply(t, namespaceYAML("outage", "")+"---\n"+namespaceYAML("outage-apps", "team: outage")+"---\n"+
		deploymentYAML("outage-apps", "a", "shop", "a:1")+"---\n"+deploymentYAML("outage-apps", "b", "shop", "b:1"))
	apply(t, strings.ReplaceAll(pipelineYAML("outage", remote), "team: shop", "team: outage"))

	binding := func() (map[string]any, error) {
		inv := get(t, "KollectInventory", "outage", "inventory")
		exports, _, _ := unstructured.NestedSlice(inv.Object, "status", "sinkExports")
		if len(exports) != 1 {
			return nil, fmt.Errorf("sinkExports %v", exports)
		}
		return exports[0].(map[string]any), nil
	}
	eventually(t, 30*time.Second, "the circuit opens after repeated failures", func() error {
		e, err := binding()
		if err != nil {
			return err
		}
		if e["circuit"] != "Open" {
			return fmt.Errorf("binding %v", e)
		}
		return nil
	})
	inv := get(t, "KollectInventory", "outage", "inventory")
	if s, r, m := condition(inv, "Degraded"); s != "True" || !strings.Contains(m, "later.git") {
		t.Errorf("inventory Degraded=%s/%s: %s", s, r, m)
	}
	if m := scrape(t); !strings.Contains(m, `kollect_sink_circuit_state{binding="snapshot/git",inventory="outage/inventory"} 2`) {
		t.Errorf("metrics do not show the open circuit:\n%s", grep(m, "kollect_sink_circuit_state"))
	}

	bareRepo(t, remote)
	eventually(t, 60*time.Second, "the sink catches up once the remote returns", files(remote)(
		"namespaces/outage-apps/deployment/a.yaml", "namespaces/outage-apps/deployment/b.yaml"))
	eventually(t, 10*time.Second, "the circuit closes and status reports both rows acknowledged", func() error {
		e, err := binding()
		if err != nil {
			return err
		}
		if e["circuit"] != "Closed" || fmt.Sprint(e["exportedCount"]) != "2" {
			return fmt.Errorf("binding %v", e)
		}
		if s, _, _ := condition(get(t, "KollectInventory", "outage", "inventory"), "Degraded"); s != "" {
			return fmt.Errorf("still Degraded")
		}
		return nil
	})
	_ = os.RemoveAll(remote)
}

func grep(text, needle string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, needle) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A profile deleted and recreated, then edited into CEL that does not
// compile: each time the target is Degraded with its reason and its rows
// stay in the sink, without a commit; only fixing it exports again.
func TestADegradedTargetKeepsItsRows(t *testing.T) {
	ctx := context.Background()
	bare := filepath.Join(t.TempDir(), "inventory.git")
	bareRepo(t, bare)
	apply(t, namespaceYAML("frozen", "")+"---\n"+namespaceYAML("frozen-apps", "team: frozen")+"---\n"+
		deploymentYAML("frozen-apps", "web", "shop", "web:1")+"---\n"+deploymentYAML("frozen-apps", "api", "shop", "api:1"))
	apply(t, strings.ReplaceAll(pipelineYAML("frozen", bare), "team: shop", "team: frozen"))
	want := files(bare)("namespaces/frozen-apps/deployment/api.yaml", "namespaces/frozen-apps/deployment/web.yaml")
	eventually(t, 20*time.Second, "the target exports", want)
	commits := func() string { out, _ := git(bare, "rev-list", "--count", "main"); return out }
	before := commits()
	degraded := func(reason string) func() error {
		return func() error {
			if s, r, m := condition(get(t, "KollectTarget", "frozen", "shop-deployments"), "Degraded"); s != "True" || r != reason {
				return fmt.Errorf("Degraded=%s/%s: %s", s, r, m)
			}
			return nil
		}
	}
	profile := &unstructured.Unstructured{}
	profile.SetAPIVersion("kollect.dev/v1alpha1")
	profile.SetKind("KollectProfile")
	profile.SetNamespace("frozen")
	profile.SetName("deployment-images")
	if err := env.Client.Delete(ctx, profile); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the target without its profile is Degraded", degraded("ProfileNotFound"))
	// Changes made while the target is degraded are not collected; what it
	// exported stays.
	apply(t, deploymentYAML("frozen-apps", "web", "shop", "web:2"))
	time.Sleep(time.Second) // several batch windows: an export would have happened
	if err := want(); err != nil {
		t.Fatalf("rows left the sink while their target was degraded: %v", err)
	}
	if got := commits(); got != before {
		t.Fatalf("a degraded target made %s commit(s)", got)
	}
	apply(t, strings.ReplaceAll(pipelineYAML("frozen", bare), "team: shop", "team: frozen"))
	eventually(t, 20*time.Second, "the recreated profile heals the target and the change made meanwhile is exported", func() error {
		if s, _, m := condition(get(t, "KollectTarget", "frozen", "shop-deployments"), "Ready"); s != "True" {
			return fmt.Errorf("Ready=%s: %s", s, m)
		}
		out, err := git(bare, "show", "main:namespaces/frozen-apps/deployment/web.yaml")
		if err != nil || !strings.Contains(out, "web:2") {
			return fmt.Errorf("web.yaml: %s (%v)", out, err)
		}
		return nil
	})
	healed := commits()
	// CEL that no longer compiles: Degraded, rows frozen.
	apply(t, `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: deployment-images, namespace: frozen}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes:
  - {name: image, path: 'cel:object.spec.template.spec.containers[0].image +'}
`)
	eventually(t, 20*time.Second, "the target with broken CEL is Degraded", degraded("ExtractionFailed"))
	time.Sleep(time.Second)
	if err := want(); err != nil {
		t.Fatalf("rows left the sink while their target's CEL did not compile: %v", err)
	}
	if got := commits(); got != healed {
		t.Fatalf("a degraded target made commits: %s then %s", healed, got)
	}
}
