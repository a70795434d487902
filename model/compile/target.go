package compile

import (
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/selection"
)

// Defaults are operator-wide selection settings (flags).
type Defaults struct {
	IncludedNamespaces []string
	ExcludedNamespaces []string
	ScrubKeys          []string
}

// Compiled is what a target generation compiles to.
type Compiled struct {
	Selection *selection.Set
	Extractor *extract.Extractor
	GVK       schema.GroupVersionKind
	// Namespaces are the namespaces the target can match, when its spec
	// names them (includedNamespaces, or a kubernetes.io/metadata.name
	// selector); nil when any namespace may match.
	Namespaces []string
}

func gvkOf(g kollectv1alpha1.GroupVersionKind) schema.GroupVersionKind {
	group := g.Group
	if group == "core" {
		group = ""
	}
	return schema.GroupVersionKind{Group: group, Version: g.Version, Kind: g.Kind}
}

func selector(s *metav1.LabelSelector, field string) (labels.Selector, error) {
	if s == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return sel, nil
}

func set(items []string) map[string]bool {
	if len(items) == 0 {
		return nil
	}
	m := make(map[string]bool, len(items))
	for _, i := range items {
		m[i] = true
	}
	return m
}

// Compile builds the engine's view of a target and its profile. The error
// says which field to fix. Cluster targets compile through the same path
// with their selection copied into a KollectTarget spec.
func Compile(t *kollectv1alpha1.KollectTarget, p *kollectv1alpha1.KollectProfile, d Defaults) (*Compiled, error) {
	return compileWith(t, p, d, extractorOf)
}

// compileWith is Compile with the profile's part compiled by extractor.
func compileWith(t *kollectv1alpha1.KollectTarget, p *kollectv1alpha1.KollectProfile, d Defaults, extractor func(*kollectv1alpha1.KollectProfile, Defaults) (*extract.Extractor, error)) (*Compiled, error) {
	var errs []error
	sel := &selection.Set{OptIn: t.Spec.WatchMode == "OptIn"}
	var err error
	if sel.NamespaceSelector, err = selector(t.Spec.NamespaceSelector, "spec.namespaceSelector"); err != nil {
		errs = append(errs, err)
	}
	if sel.NamespaceExcludeSelector, err = selector(t.Spec.NamespaceExcludeSelector, "spec.namespaceExcludeSelector"); err != nil {
		errs = append(errs, err)
	}
	included := t.Spec.IncludedNamespaces
	if len(included) == 0 {
		included = d.IncludedNamespaces
	}
	sel.Included = set(included)
	sel.Excluded = set(append(append([]string(nil), t.Spec.ExcludedNamespaces...), d.ExcludedNamespaces...))
	if len(t.Spec.ResourceRules) == 0 {
		if sel.Labels, err = selector(t.Spec.LabelSelector, "spec.labelSelector"); err != nil {
			errs = append(errs, err)
		}
		sel.Names = set(t.Spec.Names)
	}
	for i, r := range t.Spec.ResourceRules {
		rule := selection.Rule{GVK: gvkOf(r.GVK)}
		if rule.NamespaceSelector, err = selector(r.NamespaceSelector, fmt.Sprintf("spec.resourceRules[%d].namespaceSelector", i)); err != nil {
			errs = append(errs, err)
		}
		if len(r.MatchLabels) > 0 || len(r.MatchExpressions) > 0 {
			if rule.Labels, err = selector(&metav1.LabelSelector{MatchLabels: r.MatchLabels, MatchExpressions: r.MatchExpressions},
				fmt.Sprintf("spec.resourceRules[%d]", i)); err != nil {
				errs = append(errs, err)
			}
		}
		if r.MatchPolicy != "" {
			if rule.Policy, err = extract.CompileCondition(r.MatchPolicy); err != nil {
				errs = append(errs, fmt.Errorf("spec.resourceRules[%d].matchPolicy: %w", i, err))
			}
		}
		sel.Rules = append(sel.Rules, rule)
	}

	ex, err := extractor(p, d)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Compiled{Selection: sel, Extractor: ex, GVK: gvkOf(p.Spec.TargetGVK), Namespaces: namedNamespaces(t, included)}, nil
}

// extractorOf compiles what a target takes from its profile alone: the
// secret guard, the attributes and the Resource-mode embedding. The error
// names the profile and each field to fix.
func extractorOf(p *kollectv1alpha1.KollectProfile, d Defaults) (*extract.Extractor, error) {
	var errs []error
	if err := SecretGuard(p); err != nil {
		errs = append(errs, fmt.Errorf("profile %q: %w", p.Name, err))
	}
	attrs := make([]extract.Attribute, 0, len(p.Spec.Attributes))
	for _, a := range p.Spec.Attributes {
		attrs = append(attrs, extract.Attribute{Name: a.Name, Path: a.Path, Optional: a.Optional})
	}
	var scrubKeys []string
	scrubKeys = append(scrubKeys, d.ScrubKeys...)
	if p.Spec.Export != nil && p.Spec.Export.Prune != nil {
		scrubKeys = append(scrubKeys, p.Spec.Export.Prune.ScrubKeys...)
	}
	ex, err := extract.Compile(attrs, extract.NewScrubber(scrubKeys...))
	if err != nil {
		errs = append(errs, fmt.Errorf("profile %q: %w", p.Name, err))
	} else if x := p.Spec.Export; x != nil && x.Mode == "Resource" {
		pruneDefaults, pointers, paths := true, []string(nil), []string(nil)
		if x.Prune != nil {
			pruneDefaults = x.Prune.Defaults == nil || *x.Prune.Defaults
			pointers, paths = x.Prune.JSONPointers, x.Prune.JSONPaths
		}
		em, err := extract.NewEmbed(x.As, x.Include, x.DedupeIdentity == nil || *x.DedupeIdentity, pruneDefaults, pointers, paths)
		if err != nil {
			errs = append(errs, fmt.Errorf("profile %q: %w", p.Name, err))
		} else {
			ex.WithEmbed(em)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ex, nil
}

// namedNamespaces finds the namespaces a target can match when its spec
// names them, so its informers can be scoped to them.
func namedNamespaces(t *kollectv1alpha1.KollectTarget, included []string) []string {
	if len(included) > 0 {
		return slices.Clone(included)
	}
	if s := t.Spec.NamespaceSelector; s != nil && len(s.MatchExpressions) == 0 && len(s.MatchLabels) == 1 {
		if ns, ok := s.MatchLabels["kubernetes.io/metadata.name"]; ok {
			return []string{ns}
		}
	}
	return nil
}

// GVKs lists the kinds the target collects: each rule's, or the profile's
// when there are no rules.
func (c *Compiled) GVKs() []schema.GroupVersionKind {
	if len(c.Selection.Rules) == 0 {
		return []schema.GroupVersionKind{c.GVK}
	}
	out := make([]schema.GroupVersionKind, 0, len(c.Selection.Rules))
	for _, r := range c.Selection.Rules {
		out = append(out, r.GVK)
	}
	return out
}

// ClusterTarget compiles a cluster target: it selects like a namespaced
// target without a label selector or names, always in All mode, with its
// profile from the namespace its profileRef names.
func ClusterTarget(ct *kollectv1alpha1.KollectClusterTarget, p *kollectv1alpha1.KollectProfile, d Defaults) (*Compiled, error) {
	return Compile(asTarget(ct), p, d)
}

// asTarget is a cluster target's selection as a KollectTarget spec.
func asTarget(ct *kollectv1alpha1.KollectClusterTarget) *kollectv1alpha1.KollectTarget {
	return &kollectv1alpha1.KollectTarget{Spec: kollectv1alpha1.KollectTargetSpec{ProfileRef: ct.Spec.ProfileRef.Name,
		NamespaceSelector: ct.Spec.NamespaceSelector, CollectionFilterSpec: ct.Spec.CollectionFilterSpec}}
}

// Selection compiles only a target's own selection, with the profile's kind
// (nil: unknown yet): what the webhooks check of a target, the profile's
// attributes being the profile's own check.
func Selection(t *kollectv1alpha1.KollectTarget, p *kollectv1alpha1.KollectProfile) (*Compiled, error) {
	var kindOnly kollectv1alpha1.KollectProfile
	if p != nil {
		kindOnly.Spec.TargetGVK = p.Spec.TargetGVK
	}
	return Compile(t, &kindOnly, Defaults{})
}
