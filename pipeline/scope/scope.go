package scope

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/selection"
)

// Condition reasons for scope violations.
const (
	ReasonGVKDenied           = "ScopeGVKDenied"
	ReasonNamespaceDenied     = "ScopeNamespaceDenied"
	ReasonSinkDenied          = "ScopeSinkDenied"
	ReasonSinkNamespaceDenied = "SinkNamespaceDenied"
	ReasonLookupFailed        = "ScopeLookupFailed"
)

// Violation is a rule of a scope that an object breaks. Reason is the
// condition reason; the message names the scope and the list to change.
type Violation struct {
	Reason  string
	Message string
}

func (v *Violation) Error() string { return v.Message }

// Ceiling is every scope in force for an object; each must allow what the
// object asks. A nil *Ceiling means no scope applies and every check
// passes (the Secret and ambient-credential grants still default to no).
type Ceiling struct {
	rules []Rule
}

// Rule is one scope's part of a ceiling.
type Rule struct {
	// Kind is KollectScope, KollectClusterScope, or "" for the operator's
	// default ceiling.
	Kind, Name, ResourceVersion string

	kollectv1alpha1.ScopeCeilingSpec
	Sinks kollectv1alpha1.ScopeSinkAllowList
	// StaticRefNamespaces (cluster scopes) caps the namespaces cluster kinds
	// reference for profiles and sinks; empty allows any.
	StaticRefNamespaces []string
	// SecretNamespaces (namespaced scopes) are the other namespaces whose
	// Secrets the namespace's sinks may read.
	SecretNamespaces []string
	// AmbientCredentials (namespaced scopes) lets the namespace's cloud
	// sinks use the operator's own identity when they hold no key.
	AmbientCredentials bool
}

func (r Rule) String() string {
	if r.Kind == "" {
		return r.Name
	}
	return fmt.Sprintf("%s %q", r.Kind, r.Name)
}

// Of is the ceiling of the given rules (nil when there are none).
func Of(rules ...Rule) *Ceiling {
	if len(rules) == 0 {
		return nil
	}
	return &Ceiling{rules: rules}
}

// FromScope is the rule of a namespaced scope.
func FromScope(s *kollectv1alpha1.KollectScope) Rule {
	return Rule{Kind: "KollectScope", Name: s.Name, ResourceVersion: s.ResourceVersion, ScopeCeilingSpec: s.Spec.ScopeCeilingSpec,
		Sinks: s.Spec.ScopeSinkAllowList, SecretNamespaces: s.Spec.AllowedSecretNamespaces, AmbientCredentials: s.Spec.AllowAmbientCredentials}
}

// FromClusterScope is the rule of a cluster scope.
func FromClusterScope(s *kollectv1alpha1.KollectClusterScope) Rule {
	return Rule{Kind: "KollectClusterScope", Name: s.Name, ResourceVersion: s.ResourceVersion, ScopeCeilingSpec: s.Spec.ScopeCeilingSpec,
		Sinks: s.Spec.ScopeSinkAllowList, StaticRefNamespaces: s.Spec.AllowedStaticRefNamespaces}
}

// Namespaced returns the ceiling of a namespace: every KollectScope in it,
// and the kinds and namespaces every KollectClusterScope allows (a
// platform-wide cap). Sink lists, floors and grants come from the
// namespace's own scopes only.
func Namespaced(ctx context.Context, c client.Reader, namespace string) (*Ceiling, error) {
	var list kollectv1alpha1.KollectScopeList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list KollectScopes in namespace %q: %w", namespace, err)
	}
	var cluster kollectv1alpha1.KollectClusterScopeList
	if err := c.List(ctx, &cluster); err != nil {
		return nil, fmt.Errorf("list KollectClusterScopes: %w", err)
	}
	rules := make([]Rule, 0, len(list.Items)+len(cluster.Items))
	for i := range list.Items {
		rules = append(rules, FromScope(&list.Items[i]))
	}
	for i := range cluster.Items {
		s := &cluster.Items[i]
		rules = append(rules, Rule{Kind: "KollectClusterScope", Name: s.Name, ResourceVersion: s.ResourceVersion,
			ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{AllowedGVKs: s.Spec.AllowedGVKs,
				AllowedNamespaces: s.Spec.AllowedNamespaces, DeniedNamespaces: s.Spec.DeniedNamespaces}})
	}
	return sorted(rules), nil
}

// Cluster returns the ceiling of cluster kinds: every KollectClusterScope.
func Cluster(ctx context.Context, c client.Reader) (*Ceiling, error) {
	var list kollectv1alpha1.KollectClusterScopeList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list KollectClusterScopes: %w", err)
	}
	rules := make([]Rule, 0, len(list.Items))
	for i := range list.Items {
		rules = append(rules, FromClusterScope(&list.Items[i]))
	}
	return sorted(rules), nil
}

// sorted orders rules by kind and name, so messages and versions are
// stable whatever order the cache lists them in.
func sorted(rules []Rule) *Ceiling {
	sort.Slice(rules, func(i, j int) bool {
		if rules[i].Kind != rules[j].Kind {
			return rules[i].Kind > rules[j].Kind // KollectScope before KollectClusterScope
		}
		return rules[i].Name < rules[j].Name
	})
	return Of(rules...)
}

// Rules are the scopes of the ceiling.
func (c *Ceiling) Rules() []Rule {
	if c == nil {
		return nil
	}
	return c.rules
}

// Version identifies the ceiling's content for generation strings ("" when
// there is no scope).
func (c *Ceiling) Version() string {
	if c == nil {
		return ""
	}
	parts := make([]string, len(c.rules))
	for i, r := range c.rules {
		parts[i] = r.Kind + "/" + r.Name + "@" + r.ResourceVersion
	}
	return strings.Join(parts, ",")
}

func (c *Ceiling) String() string {
	parts := make([]string, len(c.Rules()))
	for i, r := range c.Rules() {
		parts[i] = r.String()
	}
	return strings.Join(parts, " and ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func coreGroup(g string) string {
	if strings.EqualFold(g, "core") {
		return ""
	}
	return strings.ToLower(g)
}

func (r Rule) allowsGVK(gvk schema.GroupVersionKind) bool {
	if len(r.AllowedGVKs) == 0 {
		return true
	}
	for _, a := range r.AllowedGVKs {
		if coreGroup(a.Group) == coreGroup(gvk.Group) && strings.EqualFold(a.Version, gvk.Version) && strings.EqualFold(a.Kind, gvk.Kind) {
			return true
		}
	}
	return false
}

// AllowsGVK reports whether every scope's allowedGVKs admits gvk
// (case-insensitive; an empty list admits any kind).
func (c *Ceiling) AllowsGVK(gvk schema.GroupVersionKind) bool {
	for _, r := range c.Rules() {
		if !r.allowsGVK(gvk) {
			return false
		}
	}
	return true
}

// CheckGVKs checks every kind a target collects.
func (c *Ceiling) CheckGVKs(gvks []schema.GroupVersionKind) *Violation {
	for _, gvk := range gvks {
		for _, r := range c.Rules() {
			if !r.allowsGVK(gvk) {
				return &Violation{ReasonGVKDenied, fmt.Sprintf("%s is not in %s allowedGVKs", gvkString(gvk), r)}
			}
		}
	}
	return nil
}

func gvkString(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Version + "/" + gvk.Kind
	}
	return gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
}

// AllowsNamespace reports whether objects of ns may be collected.
func (c *Ceiling) AllowsNamespace(ns string) bool {
	return c.namespaceViolation(ns) == nil
}

func (c *Ceiling) namespaceViolation(ns string) *Violation {
	for _, r := range c.Rules() {
		if contains(r.DeniedNamespaces, ns) {
			return &Violation{ReasonNamespaceDenied, fmt.Sprintf("workload namespace %q is in %s deniedNamespaces", ns, r)}
		}
		if len(r.AllowedNamespaces) > 0 && !contains(r.AllowedNamespaces, ns) {
			if r.Kind == "" {
				return &Violation{ReasonNamespaceDenied, fmt.Sprintf("workload namespace %q is outside %s: a KollectScope in namespace %q must list it in spec.allowedNamespaces",
					ns, r.Name, r.AllowedNamespaces[0])}
			}
			return &Violation{ReasonNamespaceDenied, fmt.Sprintf("workload namespace %q is not in %s allowedNamespaces", ns, r)}
		}
	}
	return nil
}

// CheckNamespaces checks the namespaces a target means to read: the first
// one a scope denies or leaves out of its allow-list is reported.
func (c *Ceiling) CheckNamespaces(namespaces []string) *Violation {
	for _, ns := range namespaces {
		if v := c.namespaceViolation(ns); v != nil {
			return v
		}
	}
	return nil
}

// CheckSinks checks an inventory's sink references against the per-family
// allow-lists (and the deprecated sinkRefs alias, which admits a name in
// any family) of every scope.
func (c *Ceiling) CheckSinks(refs kollectv1alpha1.SinkRefs) *Violation {
	for _, r := range c.Rules() {
		for _, fam := range []struct {
			field string
			allow []string
			refs  []kollectv1alpha1.InventorySinkRef
		}{
			{"snapshotSinkRefs", r.Sinks.SnapshotSinkRefs, refs.SnapshotSinkRefs},
			{"databaseSinkRefs", r.Sinks.DatabaseSinkRefs, refs.DatabaseSinkRefs},
			{"eventSinkRefs", r.Sinks.EventSinkRefs, refs.EventSinkRefs},
		} {
			allow := append(append([]string(nil), fam.allow...), r.Sinks.SinkRefs...)
			if len(allow) == 0 {
				continue
			}
			for _, ref := range fam.refs {
				if !contains(allow, ref.Name) {
					return &Violation{ReasonSinkDenied, fmt.Sprintf("sink %q (%s) is not in %s %s", ref.Name, fam.field, r, fam.field)}
				}
			}
		}
	}
	return nil
}

// CheckStaticRef checks a namespace a cluster kind references (a profile's
// or a sink's) against every allowedStaticRefNamespaces.
func (c *Ceiling) CheckStaticRef(what, namespace, reason string) *Violation {
	for _, r := range c.Rules() {
		if len(r.StaticRefNamespaces) > 0 && !contains(r.StaticRefNamespaces, namespace) {
			return &Violation{reason, fmt.Sprintf("%s namespace %q is not in %s allowedStaticRefNamespaces", what, namespace, r)}
		}
	}
	return nil
}

// namespacedRules are the rules of KollectScopes: only they grant.
func (c *Ceiling) namespacedRules() []Rule {
	var out []Rule
	for _, r := range c.Rules() {
		if r.Kind == "KollectScope" {
			out = append(out, r)
		}
	}
	return out
}

// AllowsSecretNamespace reports whether a sink in own may read Secrets in
// ns: its own namespace always, another only when every KollectScope of
// own lists it (and there is at least one).
func (c *Ceiling) AllowsSecretNamespace(own, ns string) bool {
	if ns == "" || ns == own {
		return true
	}
	rules := c.namespacedRules()
	for _, r := range rules {
		if !contains(r.SecretNamespaces, ns) {
			return false
		}
	}
	return len(rules) > 0
}

// AllowsAmbientCredentials reports whether the namespace's cloud sinks may
// use the operator's own identity: only when every KollectScope of the
// namespace says so (and there is at least one). The operator must allow
// it too (--allow-ambient-credentials).
func (c *Ceiling) AllowsAmbientCredentials() bool {
	rules := c.namespacedRules()
	for _, r := range rules {
		if !r.AmbientCredentials {
			return false
		}
	}
	return len(rules) > 0
}

// Floor is the minimum export interval: the largest of the scopes' floors
// (0 when none).
func (c *Ceiling) Floor() time.Duration {
	var floor time.Duration
	for _, r := range c.Rules() {
		if r.MinExportInterval == "" {
			continue
		}
		if d, err := time.ParseDuration(string(r.MinExportInterval)); err == nil && d > floor {
			floor = d
		}
	}
	return floor
}

// ClosedTo adds the operator's default ceiling for a namespaced target of
// namespace own: when no KollectScope of the namespace lists
// allowedNamespaces, the target may read its own namespace only. A scope
// that lists namespaces replaces the default (and is intersected with the
// other scopes as usual).
func (c *Ceiling) ClosedTo(own string) *Ceiling {
	for _, r := range c.namespacedRules() {
		if len(r.AllowedNamespaces) > 0 {
			return c
		}
	}
	def := Rule{Name: "the operator's default namespace ceiling (a target's own namespace; --namespace-ceiling)",
		ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{AllowedNamespaces: []string{own}}}
	return Of(append(append([]Rule(nil), c.Rules()...), def)...)
}

// Defaulted reports whether the operator's default namespace ceiling is
// part of the ceiling (ClosedTo added it).
func (c *Ceiling) Defaulted() bool {
	for _, r := range c.Rules() {
		if r.Kind == "" {
			return true
		}
	}
	return false
}

// Restrict applies the namespace ceiling to a selection, so a namespace
// created after the last check is not collected before the next one.
func (c *Ceiling) Restrict(sel *selection.Set) {
	capped := false
	for _, r := range c.Rules() {
		capped = capped || len(r.AllowedNamespaces) > 0 || len(r.DeniedNamespaces) > 0
	}
	if !capped {
		return
	}
	// Consulted for every object event: sets, built once.
	type limit struct{ allowed, denied map[string]bool }
	limits := make([]limit, 0, len(c.rules))
	for _, r := range c.rules {
		limits = append(limits, limit{setOf(r.AllowedNamespaces), setOf(r.DeniedNamespaces)})
	}
	sel.Within = func(ns string) bool {
		for _, l := range limits {
			if l.denied[ns] || (l.allowed != nil && !l.allowed[ns]) {
				return false
			}
		}
		return true
	}
}

func setOf(list []string) map[string]bool {
	if len(list) == 0 {
		return nil
	}
	m := make(map[string]bool, len(list))
	for _, x := range list {
		m[x] = true
	}
	return m
}

// WithoutClusterScopes is c for an operator that reads no cluster scopes:
// a tenant install (--tenant-mode), whose Roles cannot list them and which
// refuses the cluster kinds they govern. Its lists of KollectClusterScopes
// are empty; everything else goes to c.
func WithoutClusterScopes(c client.Client) client.Client { return noClusterScopes{c} }

type noClusterScopes struct{ client.Client }

func (n noClusterScopes) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if l, ok := list.(*kollectv1alpha1.KollectClusterScopeList); ok {
		l.Items = nil
		return nil
	}
	return n.Client.List(ctx, list, opts...)
}
