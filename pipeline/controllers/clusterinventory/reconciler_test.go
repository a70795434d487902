//go:build integration

package clusterinventory_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kollect.dev/kollect/actors/engine"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/pipeline/backends"
	"kollect.dev/kollect/pipeline/controllers/clusterinventory"
	"kollect.dev/kollect/pipeline/controllers/controllertest"
	"kollect.dev/kollect/pipeline/controllers/inventory"
	"kollect.dev/kollect/pipeline/status"
)

type fakeEngine struct{ calls []string }

func (e *fakeEngine) UpsertInventory(s engine.InventorySpec) error {
	var parts []string
	for _, b := range s.Bindings {
		parts = append(parts, b.Key)
	}
	for _, t := range s.Targets {
		parts = append(parts, t.Name)
	}
	e.calls = append(e.calls, "upsert "+strings.Join(parts, ","))
	return nil
}
func (e *fakeEngine) RemoveInventory(string)                 { e.calls = append(e.calls, "remove") }
func (e *fakeEngine) DrainInventory(context.Context, string) { e.calls = append(e.calls, "remove") }

// The failure paths of a cluster inventory: what the engine is asked to do
// and the status written.
func TestReconcilerFailurePaths(t *testing.T) {
	scheme := controllertest.Scheme()
	ci := func(mut func(*kollectv1alpha1.KollectClusterInventory)) *kollectv1alpha1.KollectClusterInventory {
		c := &kollectv1alpha1.KollectClusterInventory{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}
		c.Spec.ExportMinInterval = "30s"
		c.Spec.SnapshotSinkRefs = []kollectv1alpha1.InventorySinkRef{{Name: "git"}}
		if mut != nil {
			mut(c)
		}
		return c
	}
	tgt := &kollectv1alpha1.KollectClusterTarget{ObjectMeta: metav1.ObjectMeta{Name: "deployments", Labels: map[string]string{"tier": "apps"}}}
	sink := &kollectv1alpha1.KollectSnapshotSink{ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: "kollect-system"},
		Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "git", SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "https://git.example.com/i.git"}}}
	clusterScope := &kollectv1alpha1.KollectClusterScope{ObjectMeta: metav1.ObjectMeta{Name: "platform"}}
	clusterScope.Spec.AllowedStaticRefNamespaces = []string{"platform-sinks"}
	cases := []struct {
		name          string
		objects       []client.Object
		reason, words string
		engine        string
	}{
		{"exports", []client.Object{ci(nil), tgt, sink}, "", "", "upsert snapshot/git,deployments"},
		{"suspended", []client.Object{ci(func(c *kollectv1alpha1.KollectClusterInventory) { c.Spec.Suspend = true }), tgt, sink}, "Suspended", "spec.suspend", "remove"},
		{"no target", []client.Object{ci(nil), sink}, "NoTargets", "no KollectClusterTarget matches", "remove"},
		{"a selector that matches none", []client.Object{ci(func(c *kollectv1alpha1.KollectClusterInventory) {
			c.Spec.TargetSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "data"}}
		}), tgt, sink}, "NoTargets", "spec.targetSelector", "remove"},
		{"a selector that does not parse", []client.Object{ci(func(c *kollectv1alpha1.KollectClusterInventory) {
			c.Spec.TargetSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Sometimes"}}}
		}), tgt, sink}, "InvalidTargetSelector", `"Sometimes" is not a valid label selector operator`, "remove"},
		{"sink missing", []client.Object{ci(nil), tgt}, "SinkNotFound", `KollectSnapshotSink "git" not found in namespace "kollect-system"`, "remove"},
		{"sink namespace outside the cluster scope", []client.Object{ci(nil), tgt, sink, clusterScope}, "SinkNamespaceDenied", `"kollect-system"`, "remove"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...).WithStatusSubresource(&kollectv1alpha1.KollectClusterInventory{}).Build()
			eng := &fakeEngine{}
			r := &clusterinventory.Reconciler{Client: c, Engine: eng, Status: status.NewWriter(c, time.Second, clock.RealClock{}),
				Resolver: &inventory.Resolver{Client: c, Backends: &backends.Cache{Registry: backends.Default(endpoint.Policy{Lookup: controllertest.NoDNS})}}}
			key := types.NamespacedName{Name: "fleet"}
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			if len(eng.calls) != 1 || eng.calls[0] != tc.engine {
				t.Errorf("engine calls %v, want [%s]", eng.calls, tc.engine)
			}
			var got kollectv1alpha1.KollectClusterInventory
			if err := c.Get(context.Background(), key, &got); err != nil || len(got.Finalizers) != 1 {
				t.Fatalf("finalizer not set: %v %v", got.Finalizers, err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, status.TypeDegraded)
			switch {
			case tc.reason == "" && cond != nil:
				t.Errorf("Degraded %s: %q; want none", cond.Reason, cond.Message)
			case tc.reason != "" && (cond == nil || cond.Reason != tc.reason || !strings.Contains(cond.Message, tc.words)):
				t.Errorf("Degraded %+v; want %s: …%s…", cond, tc.reason, tc.words)
			}
		})
	}
}

// Deleting a cluster inventory whose sinks are gone releases it at once:
// there is nothing to clean up, and the finalizer must not hold it.
func TestDeletionWithoutSinksReleases(t *testing.T) {
	scheme := controllertest.Scheme()
	obj := &kollectv1alpha1.KollectClusterInventory{ObjectMeta: metav1.ObjectMeta{Name: "fleet",
		Finalizers: []string{clusterinventory.Finalizer}, DeletionTimestamp: &metav1.Time{Time: time.Now()}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(obj).Build()
	eng := &fakeEngine{}
	r := &clusterinventory.Reconciler{Client: c, Engine: eng, Status: status.NewWriter(c, time.Second, clock.RealClock{}),
		Resolver: &inventory.Resolver{Client: c, Backends: &backends.Cache{Registry: backends.Default(endpoint.Policy{Lookup: controllertest.NoDNS})}}}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "fleet"}}); err != nil {
		t.Fatal(err)
	}
	var got kollectv1alpha1.KollectClusterInventory
	if err := c.Get(context.Background(), types.NamespacedName{Name: "fleet"}, &got); err == nil {
		t.Fatalf("still there, finalizers %v", got.Finalizers)
	}
	// Once by the cleanup, once by the release (idempotent).
	if strings.Join(eng.calls, ";") != "remove;remove" {
		t.Errorf("engine calls %v, want the inventory removed", eng.calls)
	}
}
