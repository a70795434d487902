//go:build integration

package informers_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"kollect.dev/kollect/informers"
)

// An operator whose RBAC grants a kind namespace by namespace (Roles, no
// ClusterRole) lists each namespace it may on its own: subscribers of
// those namespaces are served, one that reads only namespaces it may not
// list is refused alone, and one that reads both is served what it may
// read and told what it may not.
func TestNamespacesTheOperatorMayNotListHoldOnlyTheirReaders(t *testing.T) {
	ctx := context.Background()
	for _, ns := range []string{"acc-a", "acc-b", "acc-c"} {
		createCM(t, ns, "cm")
	}
	user := "system:serviceaccount:kollect-system:by-roles"
	for _, ns := range []string{"acc-a", "acc-b"} {
		if err := env.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-cms"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}}); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-cms"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-cms"}}); err != nil {
			t.Fatal(err)
		}
	}
	as := rest.CopyConfig(env.Config)
	as.Impersonate = rest.ImpersonationConfig{UserName: user}
	m := informers.New(dynamic.NewForConfigOrDie(as), discovery.NewDiscoveryClientForConfigOrDie(env.Config), time.Hour, 5*time.Second, nil)
	t.Cleanup(m.Stop)
	reviews := informers.NewReviews(kubernetes.NewForConfigOrDie(as).AuthorizationV1().SelfSubjectAccessReviews(), time.Minute)
	var hits, misses int
	reviews.Counted = func(hit bool) {
		if hit {
			hits++
		} else {
			misses++
		}
	}
	m.CheckAccess(reviews)

	sub := func() *recorder { return &recorder{seen: map[string]informers.Event{}} }
	_, storeA, forbidden, err := m.Acquire(ctx, configMaps, "a", []string{"acc-a"}, nil, sub())
	if err != nil || len(forbidden) > 0 {
		t.Fatalf("acc-a: %v, forbidden %v", err, forbidden)
	}
	_, _, forbidden, err = m.Acquire(ctx, configMaps, "b", []string{"acc-b"}, nil, sub())
	if err != nil || len(forbidden) > 0 {
		t.Fatalf("acc-b: %v, forbidden %v", err, forbidden)
	}
	var denied *informers.ForbiddenError
	if _, _, _, err := m.Acquire(ctx, configMaps, "c", []string{"acc-c"}, nil, sub()); !errors.As(err, &denied) || !slices.Equal(denied.Namespaces, []string{"acc-c"}) {
		t.Fatalf("acc-c: want a ForbiddenError naming acc-c, got %v", err)
	}
	_, storeAC, forbidden, err := m.Acquire(ctx, configMaps, "ac", []string{"acc-a", "acc-c"}, nil, sub())
	if err != nil || !slices.Equal(forbidden, []string{"acc-c"}) {
		t.Fatalf("acc-a and acc-c: %v, forbidden %v", err, forbidden)
	}
	for name, store := range map[string]informers.Store{"a": storeA, "ac": storeAC} {
		var got []string
		for _, o := range list(t, store, "acc-a", "acc-b", "acc-c") {
			got = append(got, o.GetNamespace())
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"acc-a", "acc-b"}) {
			t.Errorf("%s: the store holds the ConfigMaps of %v, want acc-a and acc-b (listed one by one)", name, got)
		}
	}
	if misses == 0 || hits == 0 {
		t.Errorf("access reviews: %d asked, %d from the cache; want both", misses, hits)
	}
}
