//go:build integration

package clustertarget_test

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
	"kollect.dev/kollect/actors/messages"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/controllers/clustertarget"
	"kollect.dev/kollect/pipeline/controllers/controllertest"
	"kollect.dev/kollect/pipeline/status"
)

type fakeEngine struct{ calls []string }

func (e *fakeEngine) UpsertTarget(_ context.Context, s engine.TargetSpec) error {
	e.calls = append(e.calls, "upsert "+s.Ref.Name)
	return nil
}
func (e *fakeEngine) RemoveTarget(r messages.TargetRef) { e.calls = append(e.calls, "remove "+r.Name) }
func (e *fakeEngine) FreezeTarget(r messages.TargetRef) { e.calls = append(e.calls, "freeze "+r.Name) }

// The failure paths of a cluster target: what the engine is asked to do
// (collect, stop and drop the rows, or freeze them) and the status written.
func TestReconcilerFailurePaths(t *testing.T) {
	scheme := controllertest.Scheme()
	profile := &kollectv1alpha1.KollectProfile{ObjectMeta: metav1.ObjectMeta{Name: "deployments", Namespace: "platform"},
		Spec: kollectv1alpha1.KollectProfileSpec{TargetGVK: kollectv1alpha1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
			Attributes: []kollectv1alpha1.ProfileAttribute{{Name: "replicas", Path: "$.spec.replicas"}}}}
	ct := func(mut func(*kollectv1alpha1.KollectClusterTarget)) *kollectv1alpha1.KollectClusterTarget {
		c := &kollectv1alpha1.KollectClusterTarget{ObjectMeta: metav1.ObjectMeta{Name: "all"},
			Spec: kollectv1alpha1.KollectClusterTargetSpec{ProfileRef: kollectv1alpha1.NamespacedObjectReference{Namespace: "platform", Name: "deployments"}}}
		if mut != nil {
			mut(c)
		}
		return c
	}
	clusterScope := &kollectv1alpha1.KollectClusterScope{ObjectMeta: metav1.ObjectMeta{Name: "platform"}}
	clusterScope.Spec.AllowedStaticRefNamespaces = []string{"kollect-system"}
	deleting := ct(func(c *kollectv1alpha1.KollectClusterTarget) {
		c.Finalizers = []string{clustertarget.Finalizer}
		c.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	})
	cases := []struct {
		name          string
		objects       []client.Object
		reason, words string
		engine        string
	}{
		{"collects", []client.Object{ct(nil), profile}, "", "", "upsert all"},
		{"suspended: rows go", []client.Object{ct(func(c *kollectv1alpha1.KollectClusterTarget) { c.Spec.Suspend = true }), profile}, "Suspended", "spec.suspend", "remove all"},
		{"profile missing: rows kept", []client.Object{ct(nil)}, "ProfileNotFound", `KollectProfile "deployments" not found in namespace "platform"`, "freeze all"},
		{"profile outside the cluster scope: rows kept", []client.Object{ct(nil), profile, clusterScope}, "ScopeNamespaceDenied", `"platform"`, "freeze all"},
		{"bad selector: rows kept", []client.Object{ct(func(c *kollectv1alpha1.KollectClusterTarget) {
			c.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Sometimes"}}}
		}), profile}, "ExtractionFailed", "namespaceSelector", "freeze all"},
		{"deleted: collection released", []client.Object{deleting, profile}, "", "", "remove all"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...).WithStatusSubresource(&kollectv1alpha1.KollectClusterTarget{}).Build()
			eng := &fakeEngine{}
			r := &clustertarget.Reconciler{Client: c, Engine: eng, Status: status.NewWriter(c, time.Second, clock.RealClock{}), Namespaces: controllertest.Namespaces{"a", "b"}}
			key := types.NamespacedName{Name: "all"}
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			if len(eng.calls) != 1 || eng.calls[0] != tc.engine {
				t.Errorf("engine calls %v, want [%s]", eng.calls, tc.engine)
			}
			var got kollectv1alpha1.KollectClusterTarget
			err := c.Get(context.Background(), key, &got)
			if tc.name == "deleted: collection released" {
				if err == nil {
					t.Errorf("the finalizer was not removed: %v", got.Finalizers)
				}
				return
			}
			if err != nil || len(got.Finalizers) != 1 {
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
