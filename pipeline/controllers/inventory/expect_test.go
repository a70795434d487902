//go:build integration

package inventory_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/controllers/controllertest"
	"kollect.dev/kollect/pipeline/controllers/inventory"
)

// A cluster target is expected by an inventory only where its selection
// may collect: one that cannot run (a missing CRD, a profile typo) then
// holds only the inventories it could feed, not every tenant's.
func TestAClusterTargetIsExpectedOnlyWhereItMayCollect(t *testing.T) {
	team := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"tier": "apps"}}}
	ct := func(name string, f func(*kollectv1alpha1.KollectClusterTargetSpec)) client.Object {
		o := &kollectv1alpha1.KollectClusterTarget{ObjectMeta: metav1.ObjectMeta{Name: name}}
		o.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "apps"}}
		f(&o.Spec)
		return o
	}
	objs := []client.Object{team,
		ct("apps", func(*kollectv1alpha1.KollectClusterTargetSpec) {}),
		ct("infra", func(s *kollectv1alpha1.KollectClusterTargetSpec) {
			s.NamespaceSelector.MatchLabels = map[string]string{"tier": "infra"}
		}),
		ct("listed", func(s *kollectv1alpha1.KollectClusterTargetSpec) { s.IncludedNamespaces = []string{"team-a"} }),
		ct("unlisted", func(s *kollectv1alpha1.KollectClusterTargetSpec) { s.IncludedNamespaces = []string{"team-b"} }),
		ct("excluded", func(s *kollectv1alpha1.KollectClusterTargetSpec) { s.ExcludedNamespaces = []string{"team-a"} }),
		ct("excluded-by-label", func(s *kollectv1alpha1.KollectClusterTargetSpec) {
			s.NamespaceExcludeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "apps"}}
		}),
		ct("bad-selector", func(s *kollectv1alpha1.KollectClusterTargetSpec) {
			s.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Sometimes"}}}
		}),
		ct("suspended", func(s *kollectv1alpha1.KollectClusterTargetSpec) { s.Suspend = true }),
	}
	c := fake.NewClientBuilder().WithScheme(controllertest.Scheme()).WithObjects(objs...).Build()
	names := func(ns string) []string {
		refs, err := inventory.ExpectedTargets(context.Background(), c, ns, true)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range refs {
			out = append(out, r.Name)
		}
		slices.Sort(out)
		return out
	}
	if got, want := names("team-a"), []string{"apps", "bad-selector", "listed"}; !slices.Equal(got, want) {
		t.Errorf("team-a expects %v, want %v", got, want)
	}
	// A namespace that cannot be read: every running cluster target may
	// collect there, so every one is expected.
	if got := names("unknown"); len(got) != 7 {
		t.Errorf("a namespace that cannot be read expects %v, want every running cluster target (7)", got)
	}
}
