//go:build integration

package inventory_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kollect.dev/kollect/actors/engine"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/pipeline/backends"
	"kollect.dev/kollect/pipeline/controllers/controllertest"
	"kollect.dev/kollect/pipeline/controllers/inventory"
	"kollect.dev/kollect/pipeline/status"
)

type fakeEngine struct{ calls []string }

func (e *fakeEngine) UpsertInventory(s engine.InventorySpec) error {
	var names []string
	for _, b := range s.Bindings {
		names = append(names, b.Key+"@"+b.Interval.String())
	}
	e.calls = append(e.calls, "upsert "+strings.Join(names, ","))
	return nil
}
func (e *fakeEngine) RemoveInventory(string)                 { e.calls = append(e.calls, "remove") }
func (e *fakeEngine) DrainInventory(context.Context, string) { e.calls = append(e.calls, "remove") }

func TestReconcilerFailurePaths(t *testing.T) {
	scheme := controllertest.Scheme()
	inv := func(mut func(*kollectv1alpha1.KollectInventory)) *kollectv1alpha1.KollectInventory {
		i := &kollectv1alpha1.KollectInventory{ObjectMeta: metav1.ObjectMeta{Name: "inv", Namespace: "team-a"}}
		i.Spec.ExportMinInterval = "30s"
		i.Spec.SnapshotSinkRefs = []kollectv1alpha1.InventorySinkRef{{Name: "git"}}
		if mut != nil {
			mut(i)
		}
		return i
	}
	sink := &kollectv1alpha1.KollectSnapshotSink{ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: "team-a"},
		Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "git", SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "https://git.example.com/i.git"}}}
	scope := func(spec kollectv1alpha1.KollectScopeSpec) *kollectv1alpha1.KollectScope {
		return &kollectv1alpha1.KollectScope{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team-a"}, Spec: spec}
	}
	cases := []struct {
		name          string
		objects       []client.Object
		reason, words string
		engine        string
	}{
		{"exports", []client.Object{inv(nil), sink}, "", "", "upsert snapshot/git@30s"},
		{"the floor raises the interval", []client.Object{inv(nil), sink,
			scope(kollectv1alpha1.KollectScopeSpec{ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{MinExportInterval: "2m"}})}, "", "", "upsert snapshot/git@2m0s"},
		{"suspended", []client.Object{inv(func(i *kollectv1alpha1.KollectInventory) { i.Spec.Suspend = true }), sink}, "Suspended", "spec.suspend", "remove"},
		{"sink missing", []client.Object{inv(nil)}, "SinkNotFound", `KollectSnapshotSink "git" not found in namespace "team-a"`, "remove"},
		{"ref into another namespace", []client.Object{inv(func(i *kollectv1alpha1.KollectInventory) { i.Spec.SnapshotSinkRefs[0].Namespace = "platform" }), sink},
			"InvalidSinkRef", "binds sinks in its own namespace", "remove"},
		{"sink outside the scope", []client.Object{inv(nil), sink,
			scope(kollectv1alpha1.KollectScopeSpec{ScopeSinkAllowList: kollectv1alpha1.ScopeSinkAllowList{SnapshotSinkRefs: []string{"team-git"}}})},
			"ScopeSinkDenied", `sink "git" (snapshotSinkRefs) is not in KollectScope "s"`, "remove"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...).WithStatusSubresource(&kollectv1alpha1.KollectInventory{}).Build()
			eng := &fakeEngine{}
			r := &inventory.Reconciler{Client: c, Engine: eng, Status: status.NewWriter(c, time.Second, clock.RealClock{}),
				Resolver: &inventory.Resolver{Client: c, Backends: &backends.Cache{Registry: backends.Default(endpoint.Policy{Lookup: controllertest.NoDNS})}}}
			key := types.NamespacedName{Namespace: "team-a", Name: "inv"}
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			// The status the reconciler wrote, through the real writer.
			var got kollectv1alpha1.KollectInventory
			if err := c.Get(context.Background(), key, &got); err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, status.TypeDegraded)
			switch {
			case tc.reason == "" && cond != nil:
				t.Errorf("Degraded %s: %q; want none", cond.Reason, cond.Message)
			case tc.reason != "" && (cond == nil || cond.Reason != tc.reason || !strings.Contains(cond.Message, tc.words)):
				t.Errorf("Degraded %+v; want %s: …%s…", cond, tc.reason, tc.words)
			}
			if len(eng.calls) != 1 || eng.calls[0] != tc.engine {
				t.Errorf("engine calls %v, want [%s]", eng.calls, tc.engine)
			}
		})
	}
}

// A KollectInventory in namespace "cluster" would carry the identity of
// cluster inventories' rows (cluster/<name>) in every sink: it is
// Degraded, binds nothing, and its deletion cleans nothing up.
func TestAnInventoryInTheClusterNamespaceIsRefused(t *testing.T) {
	scheme := controllertest.Scheme()
	inv := &kollectv1alpha1.KollectInventory{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: "cluster"}}
	inv.Spec.ExportMinInterval = "30s"
	inv.Spec.SnapshotSinkRefs = []kollectv1alpha1.InventorySinkRef{{Name: "git"}}
	sink := &kollectv1alpha1.KollectSnapshotSink{ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: "cluster"},
		Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "git", SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "https://git.example.com/i.git"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(inv, sink).WithStatusSubresource(&kollectv1alpha1.KollectInventory{}).Build()
	eng := &fakeEngine{}
	r := &inventory.Reconciler{Client: c, Engine: eng, Status: status.NewWriter(c, time.Second, clock.RealClock{}),
		Resolver: &inventory.Resolver{Client: c, Backends: &backends.Cache{Registry: backends.Default(endpoint.Policy{Lookup: controllertest.NoDNS})}}}
	key := types.NamespacedName{Namespace: "cluster", Name: "fleet"}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	var got kollectv1alpha1.KollectInventory
	if err := c.Get(context.Background(), key, &got); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, status.TypeDegraded)
	if cond == nil || cond.Reason != inventory.ReasonReservedNamespace || !strings.Contains(cond.Message, "put it in another namespace") {
		t.Fatalf("Degraded %+v; want ReservedNamespace", cond)
	}
	if len(eng.calls) != 1 || eng.calls[0] != "remove" {
		t.Errorf("engine calls %v, want [remove]", eng.calls)
	}
}
