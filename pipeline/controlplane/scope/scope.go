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
	"kollect.dev/kollect/pipeline/model/selection"
)

// Condition reasons for scope violations (API.md §4).
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

// Ceiling is the scope in force for an object. A nil *Ceiling means no
// scope applies, and every check passes.
type Ceiling struct {
	Kind string // KollectScope or KollectClusterScope
	Name string
	// ResourceVersion changes when the scope does, so a reconciler can tell
	// that an unchanged object must be applied again.
	ResourceVersion string

	kollectv1alpha1.ScopeCeilingSpec
	Sinks kollectv1alpha1.ScopeSinkAllowList
	// StaticRefNamespaces (cluster scopes) caps the namespaces cluster kinds
	// reference for profiles and sinks; empty allows any.
	StaticRefNamespaces []string
	// SecretNamespaces (namespaced scopes) are the other namespaces whose
	// Secrets the namespace's sinks may read.
	SecretNamespaces []string
}

// Namespaced returns the effective scope of a namespace: the KollectScope
// there with the smallest name, or nil when there is none.
func Namespaced(ctx context.Context, c client.Reader, namespace string) (*Ceiling, error) {
	var list kollectv1alpha1.KollectScopeList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list KollectScopes in namespace %q: %w", namespace, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	s := list.Items[0]
	return &Ceiling{Kind: "KollectScope", Name: s.Name, ResourceVersion: s.ResourceVersion, ScopeCeilingSpec: s.Spec.ScopeCeilingSpec,
		Sinks: s.Spec.ScopeSinkAllowList, SecretNamespaces: s.Spec.AllowedSecretNamespaces}, nil
}

// Cluster returns the effective cluster scope: the KollectClusterScope with
// the smallest name, or nil when there is none.
func Cluster(ctx context.Context, c client.Reader) (*Ceiling, error) {
	var list kollectv1alpha1.KollectClusterScopeList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list KollectClusterScopes: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	s := list.Items[0]
	return &Ceiling{Kind: "KollectClusterScope", Name: s.Name, ResourceVersion: s.ResourceVersion, ScopeCeilingSpec: s.Spec.ScopeCeilingSpec,
		Sinks: s.Spec.ScopeSinkAllowList, StaticRefNamespaces: s.Spec.AllowedStaticRefNamespaces}, nil
}

// Version identifies the ceiling's content for generation strings ("" when
// there is no scope).
func (c *Ceiling) Version() string {
	if c == nil {
		return ""
	}
	return c.Name + "@" + c.ResourceVersion
}

func (c *Ceiling) String() string { return fmt.Sprintf("%s %q", c.Kind, c.Name) }

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

// AllowsGVK reports whether allowedGVKs admits gvk (case-insensitive; an
// empty list admits any kind).
func (c *Ceiling) AllowsGVK(gvk schema.GroupVersionKind) bool {
	if c == nil || len(c.AllowedGVKs) == 0 {
		return true
	}
	for _, a := range c.AllowedGVKs {
		if coreGroup(a.Group) == coreGroup(gvk.Group) && strings.EqualFold(a.Version, gvk.Version) && strings.EqualFold(a.Kind, gvk.Kind) {
			return true
		}
	}
	return false
}

// CheckGVKs checks every kind a target collects.
func (c *Ceiling) CheckGVKs(gvks []schema.GroupVersionKind) *Violation {
	for _, gvk := range gvks {
		if !c.AllowsGVK(gvk) {
			return &Violation{ReasonGVKDenied, fmt.Sprintf("%s is not in %s allowedGVKs", gvkString(gvk), c)}
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
	if c == nil {
		return true
	}
	if contains(c.DeniedNamespaces, ns) {
		return false
	}
	return len(c.AllowedNamespaces) == 0 || contains(c.AllowedNamespaces, ns)
}

// CheckNamespaces checks the namespaces a target means to read: the first
// one denied or outside the allow-list is reported.
func (c *Ceiling) CheckNamespaces(namespaces []string) *Violation {
	if c == nil {
		return nil
	}
	for _, ns := range namespaces {
		if contains(c.DeniedNamespaces, ns) {
			return &Violation{ReasonNamespaceDenied, fmt.Sprintf("workload namespace %q is in %s deniedNamespaces", ns, c)}
		}
		if len(c.AllowedNamespaces) > 0 && !contains(c.AllowedNamespaces, ns) {
			return &Violation{ReasonNamespaceDenied, fmt.Sprintf("workload namespace %q is not in %s allowedNamespaces", ns, c)}
		}
	}
	return nil
}

// CheckSinks checks an inventory's sink references against the per-family
// allow-lists (and the deprecated sinkRefs alias, which admits a name in
// any family).
func (c *Ceiling) CheckSinks(refs kollectv1alpha1.SinkRefs) *Violation {
	if c == nil {
		return nil
	}
	for _, fam := range []struct {
		field string
		allow []string
		refs  []kollectv1alpha1.InventorySinkRef
	}{
		{"snapshotSinkRefs", c.Sinks.SnapshotSinkRefs, refs.SnapshotSinkRefs},
		{"databaseSinkRefs", c.Sinks.DatabaseSinkRefs, refs.DatabaseSinkRefs},
		{"eventSinkRefs", c.Sinks.EventSinkRefs, refs.EventSinkRefs},
	} {
		allow := append(append([]string(nil), fam.allow...), c.Sinks.SinkRefs...)
		if len(allow) == 0 {
			continue
		}
		for _, ref := range fam.refs {
			if !contains(allow, ref.Name) {
				return &Violation{ReasonSinkDenied, fmt.Sprintf("sink %q (%s) is not in %s %s", ref.Name, fam.field, c, fam.field)}
			}
		}
	}
	return nil
}

// CheckStaticRef checks a namespace a cluster kind references (a profile's
// or a sink's) against allowedStaticRefNamespaces.
func (c *Ceiling) CheckStaticRef(what, namespace, reason string) *Violation {
	if c == nil || len(c.StaticRefNamespaces) == 0 || contains(c.StaticRefNamespaces, namespace) {
		return nil
	}
	return &Violation{reason, fmt.Sprintf("%s namespace %q is not in %s allowedStaticRefNamespaces", what, namespace, c)}
}

// AllowsSecretNamespace reports whether a sink in own may read Secrets in
// ns: its own namespace always, another only when the scope lists it.
func (c *Ceiling) AllowsSecretNamespace(own, ns string) bool {
	if ns == "" || ns == own {
		return true
	}
	return c != nil && contains(c.SecretNamespaces, ns)
}

// Floor is the minimum export interval (0 when none).
func (c *Ceiling) Floor() time.Duration {
	if c == nil || c.MinExportInterval == "" {
		return 0
	}
	d, err := time.ParseDuration(string(c.MinExportInterval))
	if err != nil {
		return 0
	}
	return d
}

// Restrict applies the namespace ceiling to a selection, so a namespace
// created after the last check is not collected before the next one.
func (c *Ceiling) Restrict(sel *selection.Target) {
	if c == nil || (len(c.AllowedNamespaces) == 0 && len(c.DeniedNamespaces) == 0) {
		return
	}
	// Consulted for every object event: sets, built once.
	allowed, denied := setOf(c.AllowedNamespaces), setOf(c.DeniedNamespaces)
	sel.Within = func(ns string) bool { return !denied[ns] && (allowed == nil || allowed[ns]) }
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
