package target_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kollect.dev/kollect/actors/engine"
	"kollect.dev/kollect/actors/messages"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/controlplane/controllers/target"
	"kollect.dev/kollect/pipeline/controlplane/status"
)

// fakeEngine records what the reconciler asks of the engine.
type fakeEngine struct{ calls []string }

func (e *fakeEngine) UpsertTarget(_ context.Context, s engine.TargetSpec) error {
	e.calls = append(e.calls, "upsert "+s.Ref.Name+" in "+s.Namespace)
	return nil
}
func (e *fakeEngine) RemoveTarget(r messages.TargetRef) { e.calls = append(e.calls, "remove "+r.Name) }
func (e *fakeEngine) FreezeTarget(r messages.TargetRef) { e.calls = append(e.calls, "freeze "+r.Name) }

// fakeStatus keeps the last verdict per object.
type fakeStatus struct{ verdicts map[status.Key]status.Verdict }

func (s *fakeStatus) Set(k status.Key, v status.Verdict) { s.verdicts[k] = v }
func (s *fakeStatus) Forget(k status.Key)                { delete(s.verdicts, k) }

// namespaces is a fixed namespace cache.
type namespaces []string

func (n namespaces) NamespaceNames() []string { return n }
func (n namespaces) Namespace(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetName(name)
	return u
}

func TestReconcilerFailurePaths(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kollectv1alpha1.AddToScheme(scheme)
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
	}{
		{"collects", []client.Object{tgt(nil), profile}, "", "", "upsert t in team-a"},
		{"suspended: rows go", []client.Object{tgt(func(t *kollectv1alpha1.KollectTarget) { t.Spec.Suspend = true }), profile}, "Suspended", "spec.suspend", "remove t"},
		{"profile missing: rows kept", []client.Object{tgt(nil)}, "ProfileNotFound", `KollectProfile "deployments" not found`, "freeze t"},
		{"bad selector: rows kept", []client.Object{tgt(func(t *kollectv1alpha1.KollectTarget) {
			t.Spec.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Sometimes"}}}
		}), profile}, "ExtractionFailed", "spec.labelSelector", "freeze t"},
		{"kind outside the scope: rows kept", []client.Object{tgt(nil), profile, scope}, "ScopeGVKDenied", "apps/v1/Deployment is not in KollectScope", "freeze t"},
		{"another namespace than the scope's", []client.Object{tgt(func(t *kollectv1alpha1.KollectTarget) { t.Spec.IncludedNamespaces = []string{"team-b"} }), profile,
			&kollectv1alpha1.KollectScope{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team-a"},
				Spec: kollectv1alpha1.KollectScopeSpec{ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{AllowedNamespaces: []string{"team-a"}}}}},
			"ScopeNamespaceDenied", `workload namespace "team-b"`, "freeze t"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...).Build()
			eng, st := &fakeEngine{}, &fakeStatus{verdicts: map[status.Key]status.Verdict{}}
			r := &target.Reconciler{Client: c, Engine: eng, Status: st, Namespaces: namespaces{"team-a", "team-b"}}
			key := types.NamespacedName{Namespace: "team-a", Name: "t"}
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			v := st.verdicts[status.Key{Kind: status.Target, NamespacedName: key}]
			if v.Reason != tc.reason || !strings.Contains(v.Message, tc.words) {
				t.Errorf("verdict %s: %q; want %s: …%s…", v.Reason, v.Message, tc.reason, tc.words)
			}
			if len(eng.calls) != 1 || eng.calls[0] != tc.engine {
				t.Errorf("engine calls %v, want [%s]", eng.calls, tc.engine)
			}
			var got kollectv1alpha1.KollectTarget
			if err := c.Get(context.Background(), key, &got); err != nil || len(got.Finalizers) != 1 {
				t.Errorf("finalizer not set: %v %v", got.Finalizers, err)
			}
		})
	}
}
