//go:build integration

package target_test

import (
	"context"
	"fmt"
	"slices"
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
	"kollect.dev/kollect/actors/messages"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/controllers/controllertest"
	"kollect.dev/kollect/pipeline/controllers/target"
	"kollect.dev/kollect/pipeline/status"
)

// fakeEngine records what the reconciler asks of the engine.
type fakeEngine struct{ calls []string }

func (e *fakeEngine) UpsertTarget(_ context.Context, s engine.TargetSpec) error {
	e.calls = append(e.calls, "upsert "+s.Ref.Name+" in "+strings.Join(s.Namespaces, ","))
	return nil
}
func (e *fakeEngine) RemoveTarget(r messages.TargetRef) { e.calls = append(e.calls, "remove "+r.Name) }
func (e *fakeEngine) FreezeTarget(r messages.TargetRef) { e.calls = append(e.calls, "freeze "+r.Name) }

func TestReconcilerFailurePaths(t *testing.T) {
	scheme := controllertest.Scheme()
	profile := &kollectv1alpha1.KollectProfile{ObjectMeta: metav1.ObjectMeta{Name: "deployments", Namespace: "team-a"},
		Spec: kollectv1alpha1.KollectProfileSpec{TargetGVK: kollectv1alpha1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
			Attributes: []kollectv1alpha1.ProfileAttribute{{Name: "replicas", Path: "$.spec.replicas"}}}}
	scope := &kollectv1alpha1.KollectScope{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team-a"},
		Spec: kollectv1alpha1.KollectScopeSpec{ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{
			AllowedGVKs: []kollectv1alpha1.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}}}}}
	tgt := func(mut func(*kollectv1alpha1.KollectTarget)) *kollectv1alpha1.KollectTarget {
		t := &kollectv1alpha1.KollectTarget{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "team-a"},
			Spec: kollectv1alpha1.KollectTargetSpec{ProfileRef: "deployments"}}
		t.Spec.IncludedNamespaces = []string{"team-a"}
		if mut != nil {
			mut(t)
		}
		return t
	}
	cases := []struct {
		name    string
		objects []client.Object
		reason  string // the Degraded reason, "" when Ready
		words   string
		engine  string // the engine call
		// effective, when set, is the status's effectiveNamespaces.
		effective string
	}{
		{"collects", []client.Object{tgt(nil), profile}, "", "", "upsert t in team-a", ""},
		{"suspended: rows go", []client.Object{tgt(func(t *kollectv1alpha1.KollectTarget) { t.Spec.Suspend = true }), profile}, "Suspended", "spec.suspend", "remove t", ""},
		{"profile missing: rows kept", []client.Object{tgt(nil)}, "ProfileNotFound", `KollectProfile "deployments" not found`, "freeze t", ""},
		{"bad selector: rows kept", []client.Object{tgt(func(t *kollectv1alpha1.KollectTarget) {
			t.Spec.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Sometimes"}}}
		}), profile}, "ExtractionFailed", "spec.labelSelector", "freeze t", ""},
		{"kind outside the scope: rows kept", []client.Object{tgt(nil), profile, scope}, "ScopeGVKDenied", "apps/v1/Deployment is not in KollectScope", "freeze t", ""},
		{"another namespace than the scope's", []client.Object{tgt(func(t *kollectv1alpha1.KollectTarget) { t.Spec.IncludedNamespaces = []string{"team-b"} }), profile,
			&kollectv1alpha1.KollectScope{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team-a"},
				Spec: kollectv1alpha1.KollectScopeSpec{ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{AllowedNamespaces: []string{"team-a"}}}}},
			"ScopeNamespaceDenied", `workload namespace "team-b"`, "freeze t", ""},
		{"no namespace named and no scope: its own namespace only", []client.Object{tgt(func(t *kollectv1alpha1.KollectTarget) { t.Spec.IncludedNamespaces = nil }), profile},
			"", "", "upsert t in team-a", "team-a"},
		{"another namespace named and no scope", []client.Object{tgt(func(t *kollectv1alpha1.KollectTarget) { t.Spec.IncludedNamespaces = []string{"team-b"} }), profile},
			"ScopeNamespaceDenied", `workload namespace "team-b" is outside the operator's default namespace ceiling`, "freeze t", ""},
		{"a cluster scope denying its own namespace", []client.Object{tgt(func(t *kollectv1alpha1.KollectTarget) { t.Spec.IncludedNamespaces = nil }), profile,
			&kollectv1alpha1.KollectClusterScope{ObjectMeta: metav1.ObjectMeta{Name: "platform"},
				Spec: kollectv1alpha1.KollectClusterScopeSpec{ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{DeniedNamespaces: []string{"team-a"}}}}},
			"ScopeNamespaceDenied", `workload namespace "team-a" is in KollectClusterScope "platform" deniedNamespaces`, "freeze t", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...).WithStatusSubresource(&kollectv1alpha1.KollectTarget{}).Build()
			eng, w := &fakeEngine{}, status.NewWriter(c, time.Second, clock.RealClock{})
			r := &target.Reconciler{Client: c, Engine: eng, Status: w, Namespaces: controllertest.Namespaces{"team-a", "team-b"}}
			key := types.NamespacedName{Namespace: "team-a", Name: "t"}
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			if len(eng.calls) != 1 || eng.calls[0] != tc.engine {
				t.Errorf("engine calls %v, want [%s]", eng.calls, tc.engine)
			}
			var got kollectv1alpha1.KollectTarget
			if err := c.Get(context.Background(), key, &got); err != nil || len(got.Finalizers) != 1 {
				t.Fatalf("finalizer not set: %v %v", got.Finalizers, err)
			}
			// The status the reconciler wrote, through the real writer.
			cond := meta.FindStatusCondition(got.Status.Conditions, status.TypeDegraded)
			if tc.reason == "" {
				if cond != nil {
					t.Errorf("Degraded %s: %q; want none", cond.Reason, cond.Message)
				}
				// Ready waits for the engine's first report, then says
				// what it counted.
				if meta.FindStatusCondition(got.Status.Conditions, status.TypeReady) != nil {
					t.Errorf("Ready before any report: %+v", got.Status.Conditions)
				}
				w.TargetReport(engine.TargetReport{Ref: messages.TargetRef{Kind: "KollectTarget", Namespace: "team-a", Name: "t"}, Count: 3})
				if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
					t.Fatal(err)
				}
				_ = c.Get(context.Background(), key, &got)
				ready := meta.FindStatusCondition(got.Status.Conditions, status.TypeReady)
				if ready == nil || !strings.Contains(ready.Message, "collecting 3 resource(s)") || got.Status.CollectedCount == nil || *got.Status.CollectedCount != 3 {
					t.Errorf("after a report of 3 rows: Ready %+v, count %v", ready, got.Status.CollectedCount)
				}
				if tc.effective != "" && strings.Join(got.Status.EffectiveNamespaces, ",") != tc.effective {
					t.Errorf("effectiveNamespaces %v, want %s", got.Status.EffectiveNamespaces, tc.effective)
				}
				return
			}
			if cond == nil || cond.Reason != tc.reason || !strings.Contains(cond.Message, tc.words) {
				t.Errorf("Degraded %+v; want %s: …%s…", cond, tc.reason, tc.words)
			}
		})
	}
}

// In a cluster of thousands of namespaces, status lists the first 256 of
// each set, sorted, and counts them all: a full list grew past the API
// server's object limit and every later status patch failed.
func TestStatusListsTheFirstNamespacesAndCountsThemAll(t *testing.T) {
	var nss controllertest.Namespaces
	for i := range 300 {
		nss = append(nss, fmt.Sprintf("ns-%03d", 299-i))
	}
	profile := &kollectv1alpha1.KollectProfile{ObjectMeta: metav1.ObjectMeta{Name: "cms", Namespace: "ns-000"},
		Spec: kollectv1alpha1.KollectProfileSpec{TargetGVK: kollectv1alpha1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}}}
	tgt := &kollectv1alpha1.KollectTarget{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns-000"},
		Spec: kollectv1alpha1.KollectTargetSpec{ProfileRef: "cms"}}
	tgt.Spec.ExcludedNamespaces = []string{"ns-299"}
	c := fake.NewClientBuilder().WithScheme(controllertest.Scheme()).WithObjects(tgt, profile).WithStatusSubresource(&kollectv1alpha1.KollectTarget{}).Build()
	w := status.NewWriter(c, time.Second, clock.RealClock{})
	r := &target.Reconciler{Client: c, Engine: &fakeEngine{}, Status: w, Namespaces: nss, AllNamespaces: true}
	key := types.NamespacedName{Namespace: "ns-000", Name: "t"}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	w.TargetReport(engine.TargetReport{Ref: messages.TargetRef{Kind: "KollectTarget", Namespace: "ns-000", Name: "t"}})
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	var got kollectv1alpha1.KollectTarget
	if err := c.Get(context.Background(), key, &got); err != nil {
		t.Fatal(err)
	}
	s := got.Status
	for _, l := range []struct {
		name  string
		names []string
		count int
	}{{"matched", s.MatchedNamespaces, s.MatchedNamespaceCount}, {"effective", s.EffectiveNamespaces, s.EffectiveNamespaceCount}} {
		if len(l.names) != status.ListedNamespaces || l.names[0] != "ns-000" || l.names[255] != "ns-255" || !slices.IsSorted(l.names) {
			t.Errorf("%s: %d names from %v to %v, want the first %d sorted", l.name, len(l.names), l.names[:1], l.names[len(l.names)-1:], status.ListedNamespaces)
		}
		if l.count != 299 {
			t.Errorf("%s count %d, want 299 (300 namespaces, one excluded)", l.name, l.count)
		}
	}
}
