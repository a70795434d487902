package compile

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

func profile(uid types.UID, version, path string) *kollectv1alpha1.KollectProfile {
	return &kollectv1alpha1.KollectProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team", UID: uid, ResourceVersion: version},
		Spec: kollectv1alpha1.KollectProfileSpec{TargetGVK: kollectv1alpha1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			Attributes: []kollectv1alpha1.ProfileAttribute{{Name: "a", Path: path}}},
	}
}

// TestCacheCompilesEachProfileVersionOnce: a second compile of the same
// profile version reuses its extractor; a new version, another profile, a
// profile that names no version or other defaults compile again.
func TestCacheCompilesEachProfileVersionOnce(t *testing.T) {
	first := profile("u1", "10", "cel:object.metadata.name")
	cases := []struct {
		name   string
		second *kollectv1alpha1.KollectProfile
		scrub  []string
		reused bool
	}{
		{"same version", profile("u1", "10", "cel:object.metadata.name"), nil, true},
		{"new version", profile("u1", "11", "cel:object.metadata.name"), nil, false},
		{"another profile", profile("u2", "10", "cel:object.metadata.name"), nil, false},
		{"no version", profile("", "", "cel:object.metadata.name"), nil, false},
		{"other scrub defaults", profile("u1", "10", "cel:object.metadata.name"), []string{"token"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c Cache
			target := &kollectv1alpha1.KollectTarget{Spec: kollectv1alpha1.KollectTargetSpec{ProfileRef: "p"}}
			a, err := c.Compile(target, first, Defaults{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := c.Compile(target, tc.second, Defaults{ScrubKeys: tc.scrub})
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Extractor == b.Extractor; got != tc.reused {
				t.Fatalf("extractor reused: %v, want %v", got, tc.reused)
			}
			if a.Selection == b.Selection {
				t.Fatal("the selection is shared; each reconcile narrows its own")
			}
		})
	}
}

// TestCacheKeepsAProfilesErrorAndItsFix: a broken version keeps failing
// without a compile, and its fix (a new version) compiles.
func TestCacheKeepsAProfilesErrorAndItsFix(t *testing.T) {
	var c Cache
	target := &kollectv1alpha1.KollectTarget{Spec: kollectv1alpha1.KollectTargetSpec{ProfileRef: "p"}}
	for range 2 {
		if _, err := c.Compile(target, profile("u1", "1", "cel:object.("), Defaults{}); err == nil {
			t.Fatal("a CEL syntax error compiled")
		}
	}
	if _, err := c.Compile(target, profile("u1", "2", "cel:object.metadata.name"), Defaults{}); err != nil {
		t.Fatalf("the fixed version: %v", err)
	}
	ct := &kollectv1alpha1.KollectClusterTarget{Spec: kollectv1alpha1.KollectClusterTargetSpec{ProfileRef: kollectv1alpha1.NamespacedObjectReference{Name: "p", Namespace: "team"}}}
	if _, err := c.ClusterTarget(ct, profile("u1", "1", "cel:object.("), Defaults{}); err == nil {
		t.Fatal("a cluster target of the broken version compiled")
	}
}
