package scope

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/selection"
)

func refs(snapshot, database string) kollectv1alpha1.SinkRefs {
	var r kollectv1alpha1.SinkRefs
	if snapshot != "" {
		r.SnapshotSinkRefs = []kollectv1alpha1.InventorySinkRef{{Name: snapshot}}
	}
	if database != "" {
		r.DatabaseSinkRefs = []kollectv1alpha1.InventorySinkRef{{Name: database}}
	}
	return r
}

func platform() Rule {
	return Rule{Kind: "KollectScope", Name: "team-a-scope",
		ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{
			AllowedGVKs:       []kollectv1alpha1.GroupVersionKind{{Group: "Apps", Version: "v1", Kind: "deployment"}, {Group: "core", Version: "v1", Kind: "ConfigMap"}},
			AllowedNamespaces: []string{"team-a", "shared"}, DeniedNamespaces: []string{"shared"}, MinExportInterval: "1m"},
		Sinks:            kollectv1alpha1.ScopeSinkAllowList{SnapshotSinkRefs: []string{"team-git"}, SinkRefs: []string{"any-family"}},
		SecretNamespaces: []string{"platform"}, AmbientCredentials: true}
}

func TestChecks(t *testing.T) {
	c := Of(platform())
	cases := []struct {
		name  string
		check func(*Ceiling) *Violation
		want  string // reason, or ""
	}{
		{"listed kind, any case", func(c *Ceiling) *Violation {
			return c.CheckGVKs([]schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "Deployment"}, {Version: "v1", Kind: "ConfigMap"}})
		}, ""},
		{"kind not listed", func(c *Ceiling) *Violation {
			return c.CheckGVKs([]schema.GroupVersionKind{{Version: "v1", Kind: "Secret"}})
		}, ReasonGVKDenied},
		{"own namespace", func(c *Ceiling) *Violation { return c.CheckNamespaces([]string{"team-a"}) }, ""},
		{"another namespace", func(c *Ceiling) *Violation { return c.CheckNamespaces([]string{"team-a", "team-b"}) }, ReasonNamespaceDenied},
		{"denied wins over allowed", func(c *Ceiling) *Violation { return c.CheckNamespaces([]string{"shared"}) }, ReasonNamespaceDenied},
		{"listed sink", func(c *Ceiling) *Violation { return c.CheckSinks(refs("team-git", "")) }, ""},
		{"sink not listed", func(c *Ceiling) *Violation { return c.CheckSinks(refs("platform-git", "")) }, ReasonSinkDenied},
		{"alias admits any family", func(c *Ceiling) *Violation { return c.CheckSinks(refs("", "any-family")) }, ""},
		{"alias restricts a family without a list", func(c *Ceiling) *Violation { return c.CheckSinks(refs("", "db")) }, ReasonSinkDenied},
		{"no scope", func(*Ceiling) *Violation {
			var none *Ceiling
			return none.CheckSinks(refs("x", "y"))
		}, ""},
		{"static ref unrestricted", func(c *Ceiling) *Violation { return c.CheckStaticRef("profileRef", "x", ReasonNamespaceDenied) }, ""},
		{"static ref refused", func(c *Ceiling) *Violation {
			cs := Of(Rule{Kind: "KollectClusterScope", Name: "c", StaticRefNamespaces: []string{"kollect-system"}})
			return cs.CheckStaticRef("sink \"s\"", "team-b", ReasonSinkNamespaceDenied)
		}, ReasonSinkNamespaceDenied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.check(c)
			got := ""
			if v != nil {
				got = v.Reason
				if v.Message == "" {
					t.Error("a violation without a message")
				}
			}
			if got != tc.want {
				t.Fatalf("reason %q, want %q (%v)", got, tc.want, v)
			}
		})
	}
	if c.Floor() != time.Minute {
		t.Errorf("floor %v, want 1m", c.Floor())
	}
	var none *Ceiling
	if !none.AllowsSecretNamespace("team-a", "team-a") || none.AllowsSecretNamespace("team-a", "kollect-system") {
		t.Error("without a scope a sink reads its own namespace's Secrets only")
	}
	if !c.AllowsSecretNamespace("team-a", "platform") || c.AllowsSecretNamespace("team-a", "kollect-system") {
		t.Error("allowedSecretNamespaces not honoured")
	}
	if none.AllowsAmbientCredentials() || !c.AllowsAmbientCredentials() {
		t.Error("ambient credentials: refused without a scope, granted by one")
	}
}

// TestAnotherScopeOnlyNarrows is the tenant who creates KollectScope "0"
// (upstream used only the scope with the smallest name): whatever it
// says, nothing the platform's scope refuses becomes allowed.
func TestAnotherScopeOnlyNarrows(t *testing.T) {
	open := Rule{Kind: "KollectScope", Name: "0"} // no caps at all
	widening := Rule{Kind: "KollectScope", Name: "0", ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{
		AllowedNamespaces: []string{"team-b", "kube-system"}, MinExportInterval: "1s"},
		Sinks:            kollectv1alpha1.ScopeSinkAllowList{SnapshotSinkRefs: []string{"platform-git"}},
		SecretNamespaces: []string{"kollect-system", "platform"}, AmbientCredentials: true}
	for _, tenant := range []Rule{open, widening} {
		c := Of(tenant, platform())
		if v := c.CheckNamespaces([]string{"team-b"}); v == nil || v.Reason != ReasonNamespaceDenied {
			t.Errorf("tenant scope %+v: team-b allowed (%v)", tenant, v)
		}
		if v := c.CheckGVKs([]schema.GroupVersionKind{{Version: "v1", Kind: "Secret"}}); v == nil {
			t.Errorf("tenant scope %+v: Secrets allowed", tenant)
		}
		if v := c.CheckSinks(refs("platform-git", "")); v == nil {
			t.Errorf("tenant scope %+v: platform-git allowed", tenant)
		}
		if c.AllowsSecretNamespace("team-a", "kollect-system") {
			t.Errorf("tenant scope %+v: kollect-system Secrets allowed", tenant)
		}
		if c.Floor() != time.Minute {
			t.Errorf("tenant scope %+v: floor %v, want the platform's 1m", tenant, c.Floor())
		}
		sel := &selection.Set{}
		c.Restrict(sel)
		if sel.NamespaceMatches(selection.Namespace{Name: "kube-system"}) || sel.NamespaceMatches(selection.Namespace{Name: "team-b"}) {
			t.Errorf("tenant scope %+v: the selection reads beyond the platform's namespaces", tenant)
		}
	}
	// A narrowing tenant scope does narrow, and grants need every scope.
	narrow := Of(Rule{Kind: "KollectScope", Name: "0", ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{DeniedNamespaces: []string{"team-a"}}}, platform())
	if narrow.CheckNamespaces([]string{"team-a"}) == nil || narrow.AllowsSecretNamespace("team-a", "platform") || narrow.AllowsAmbientCredentials() {
		t.Error("a narrowing scope is not honoured, or a grant holds without every scope")
	}
}

func TestClosedByDefault(t *testing.T) {
	cluster := Rule{Kind: "KollectClusterScope", Name: "platform", ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{DeniedNamespaces: []string{"kube-system"}}}
	for _, tc := range []struct {
		name    string
		c       *Ceiling
		allowed []string
		denied  []string
	}{
		{"no scope: its own namespace", Of().ClosedTo("team-a"), []string{"team-a"}, []string{"team-b", "kube-system"}},
		{"a scope without namespaces grants none", Of(Rule{Kind: "KollectScope", Name: "s"}).ClosedTo("team-a"), []string{"team-a"}, []string{"team-b"}},
		{"a cluster scope's list grants none", Of(Rule{Kind: "KollectClusterScope", Name: "c", ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{
			AllowedNamespaces: []string{"team-a", "team-b"}}}).ClosedTo("team-a"), []string{"team-a"}, []string{"team-b"}},
		{"a scope's list replaces the default", Of(platform()).ClosedTo("team-a"), []string{"team-a"}, []string{"team-b", "shared"}},
		{"a scope granting a shared namespace", Of(Rule{Kind: "KollectScope", Name: "s", ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{
			AllowedNamespaces: []string{"team-a", "shared"}}}, cluster).ClosedTo("team-a"), []string{"team-a", "shared"}, []string{"team-b", "kube-system"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v := tc.c.CheckNamespaces(tc.allowed); v != nil {
				t.Errorf("refused: %v", v)
			}
			for _, ns := range tc.denied {
				v := tc.c.CheckNamespaces([]string{ns})
				if v == nil || v.Reason != ReasonNamespaceDenied {
					t.Errorf("%s allowed", ns)
				}
			}
		})
	}
	v := Of().ClosedTo("team-a").CheckNamespaces([]string{"kube-system"})
	if want := `workload namespace "kube-system" is outside the operator's default namespace ceiling (a target's own namespace; --namespace-ceiling): a KollectScope in namespace "team-a" must list it in spec.allowedNamespaces`; v.Message != want {
		t.Errorf("message %q\nwant    %q", v.Message, want)
	}
}

func TestRestrictCapsTheSelection(t *testing.T) {
	c := Of(Rule{Kind: "KollectScope", Name: "s", ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{AllowedNamespaces: []string{"team-a"}}})
	sel := &selection.Set{}
	c.Restrict(sel)
	if !sel.NamespaceMatches(selection.Namespace{Name: "team-a"}) || sel.NamespaceMatches(selection.Namespace{Name: "team-b"}) {
		t.Fatal("the ceiling does not cap the selection")
	}
}
