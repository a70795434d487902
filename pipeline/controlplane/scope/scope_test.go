package scope

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/model/selection"
)

func TestChecks(t *testing.T) {
	c := &Ceiling{Kind: "KollectScope", Name: "team-a-scope",
		ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{
			AllowedGVKs:       []kollectv1alpha1.GroupVersionKind{{Group: "Apps", Version: "v1", Kind: "deployment"}, {Group: "core", Version: "v1", Kind: "ConfigMap"}},
			AllowedNamespaces: []string{"team-a", "shared"}, DeniedNamespaces: []string{"shared"}, MinExportInterval: "1m"},
		Sinks:            kollectv1alpha1.ScopeSinkAllowList{SnapshotSinkRefs: []string{"team-git"}, SinkRefs: []string{"any-family"}},
		SecretNamespaces: []string{"platform"}}
	refs := func(snapshot, database string) kollectv1alpha1.SinkRefs {
		var r kollectv1alpha1.SinkRefs
		if snapshot != "" {
			r.SnapshotSinkRefs = []kollectv1alpha1.InventorySinkRef{{Name: snapshot}}
		}
		if database != "" {
			r.DatabaseSinkRefs = []kollectv1alpha1.InventorySinkRef{{Name: database}}
		}
		return r
	}
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
			cs := &Ceiling{Kind: "KollectClusterScope", Name: "c", StaticRefNamespaces: []string{"kollect-system"}}
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
}

func TestRestrictCapsTheSelection(t *testing.T) {
	c := &Ceiling{ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{AllowedNamespaces: []string{"team-a"}}}
	sel := &selection.Target{}
	c.Restrict(sel)
	if !sel.NamespaceMatches(selection.Namespace{Name: "team-a"}) || sel.NamespaceMatches(selection.Namespace{Name: "team-b"}) {
		t.Fatal("the ceiling does not cap the selection")
	}
}
