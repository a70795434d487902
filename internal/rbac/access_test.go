//go:build integration

package rbac_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// An operator granted a kind by Roles in some namespaces (no ClusterRole
// for it) collects there: a target of a namespace it may not list is
// Degraded/ScopeForbidden alone, and a target reading both kinds of
// namespace collects where it may and says Synced/ScopeForbidden.
func TestAnOperatorGrantedByRolesCollectsWhereItMay(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	user := "system:serviceaccount:kollect-system:by-roles"
	// Everything the manager needs, but ConfigMaps, cluster-wide.
	everything := []rbacv1.PolicyRule{
		{APIGroups: []string{"kollect.dev", "coordination.k8s.io", "events.k8s.io", "apps"}, Resources: []string{"*"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces", "secrets", "events", "services", "pods"}, Verbs: []string{"*"}},
	}
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "by-roles"}, Rules: everything},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "by-roles"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: user}},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "by-roles"}},
	}
	for _, ns := range []string{"sf-a", "sf-b", "sf-c"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings", Labels: map[string]string{"app": "sf"}}},
			&kollectv1alpha1.KollectProfile{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cms"},
				Spec: kollectv1alpha1.KollectProfileSpec{TargetGVK: kollectv1alpha1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}}},
			&kollectv1alpha1.KollectTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own"},
				Spec: kollectv1alpha1.KollectTargetSpec{ProfileRef: "cms", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sf"}}}})
		if ns != "sf-c" {
			objs = append(objs, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-cms"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}},
				&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-cms"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: user}},
					RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-cms"}})
		}
	}
	// A platform target that reads sf-a and sf-c, as its scope grants.
	objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sf-platform"}},
		&kollectv1alpha1.KollectProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "sf-platform", Name: "cms"},
			Spec: kollectv1alpha1.KollectProfileSpec{TargetGVK: kollectv1alpha1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}}},
		&kollectv1alpha1.KollectScope{ObjectMeta: metav1.ObjectMeta{Namespace: "sf-platform", Name: "platform"},
			Spec: kollectv1alpha1.KollectScopeSpec{ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{AllowedNamespaces: []string{"sf-a", "sf-c"}}}},
		&kollectv1alpha1.KollectTarget{ObjectMeta: metav1.ObjectMeta{Namespace: "sf-platform", Name: "spanning"},
			Spec: kollectv1alpha1.KollectTargetSpec{ProfileRef: "cms", CollectionFilterSpec: kollectv1alpha1.CollectionFilterSpec{IncludedNamespaces: []string{"sf-a", "sf-c"}},
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sf"}}}})
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("%T %s: %v", o, o.GetName(), err)
		}
	}

	as := rest.CopyConfig(env.Config)
	as.Impersonate = rest.ImpersonationConfig{UserName: user}
	mgr, err := env.StartManagerAs(as)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Stop() })

	for _, tc := range []struct {
		ns, name, typ, reason, words string
		count                        int64
	}{
		{"sf-a", "own", "Synced", "Collecting", "", 1},
		{"sf-b", "own", "Synced", "Collecting", "", 1},
		{"sf-c", "own", "Degraded", "ScopeForbidden", "may not list configmaps in namespace sf-c", -1},
		{"sf-platform", "spanning", "Synced", "ScopeForbidden", "configmaps in sf-c", 1},
	} {
		testenv.Eventually(t, 60*time.Second, fmt.Sprintf("%s/%s says %s/%s", tc.ns, tc.name, tc.typ, tc.reason), func() error {
			var tgt kollectv1alpha1.KollectTarget
			if err := c.Get(ctx, client.ObjectKey{Namespace: tc.ns, Name: tc.name}, &tgt); err != nil {
				return err
			}
			cond := meta.FindStatusCondition(tgt.Status.Conditions, tc.typ)
			if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != tc.reason || !strings.Contains(cond.Message, tc.words) {
				return fmt.Errorf("conditions %+v", tgt.Status.Conditions)
			}
			if tc.count >= 0 && (tgt.Status.CollectedCount == nil || *tgt.Status.CollectedCount != tc.count) {
				return fmt.Errorf("collected %v, want %d", tgt.Status.CollectedCount, tc.count)
			}
			return nil
		})
	}
}
