package selection

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/projection"
)

// WatchKey is the label (on objects and namespaces) and annotation (on
// namespaces, as kollect.dev/namespace-watch) that opt in or out.
const (
	WatchLabel          = "kollect.dev/watch"
	NamespaceWatchAnnot = "kollect.dev/namespace-watch"
)

// Namespace is what selection needs to know about a namespace. Nil
// Labels or Annotations read as empty.
type Namespace struct {
	Name        string
	Labels      labels.Labels
	Annotations labels.Labels
}

// NamespaceOf describes namespace name from its object (nil when unknown),
// reading its labels and annotations in place.
func NamespaceOf(name string, obj *unstructured.Unstructured) Namespace {
	ns := Namespace{Name: name}
	if obj != nil {
		ns.Labels, ns.Annotations = MetadataMap(obj, "labels"), MetadataMap(obj, "annotations")
	}
	return ns
}

// MetadataMap reads metadata.<field> (labels or annotations) of obj in
// place, without the copy GetLabels and GetAnnotations make.
func MetadataMap(obj *unstructured.Unstructured, field string) ObjectLabels {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", field)
	m, _ := v.(map[string]any)
	return ObjectLabels(m)
}

func (ns *Namespace) labels() labels.Labels {
	if ns.Labels == nil {
		return labels.Set(nil)
	}
	return ns.Labels
}

func (ns *Namespace) annotation(key string) string {
	if ns.Annotations == nil {
		return ""
	}
	return ns.Annotations.Get(key)
}

// Rule is one compiled resourceRules entry.
type Rule struct {
	GVK               schema.GroupVersionKind
	NamespaceSelector labels.Selector // nil: any namespace
	Labels            labels.Selector // nil: any labels
	Policy            *extract.Condition
}

// Set is a target's compiled selection: the namespaces, labels, names and
// rules an object must meet to become one of its rows.
type Set struct {
	Included                 map[string]bool // empty: no allow-list
	Excluded                 map[string]bool
	NamespaceSelector        labels.Selector // nil: every namespace
	NamespaceExcludeSelector labels.Selector // nil: none excluded
	Labels                   labels.Selector // legacy mode; nil: any
	Names                    map[string]bool // legacy mode; empty: any
	Rules                    []Rule
	OptIn                    bool
	// Within, when not nil, is a ceiling no other setting can widen: only
	// these namespaces are ever collected (a scope's allow- and deny-lists).
	Within func(namespace string) bool
}

// MayMatchNamespace reports whether objects of the namespace named could
// be collected whatever its labels: false only when its name alone rules
// it out (outside the allow-list or the ceiling, or excluded). A change to
// such a namespace concerns the target not at all.
func (t *Set) MayMatchNamespace(name string) bool {
	if len(t.Included) > 0 && !t.Included[name] {
		return false
	}
	if t.Within != nil && !t.Within(name) {
		return false
	}
	return !t.Excluded[name]
}

// NamespaceMatches reports whether objects of ns are collected at all.
func (t *Set) NamespaceMatches(ns Namespace) bool {
	if !t.MayMatchNamespace(ns.Name) {
		return false
	}
	set := ns.labels()
	if t.NamespaceExcludeSelector != nil && t.NamespaceExcludeSelector.Matches(set) {
		return false
	}
	return t.NamespaceSelector == nil || t.NamespaceSelector.Matches(set)
}

// Matches decides whether the object is collected. ns describes the
// object's namespace ("default" for cluster-scoped objects); nil skips the
// namespace tests.
func (t *Set) Matches(gvk schema.GroupVersionKind, name string, objLabels labels.Labels, ns *Namespace, obj map[string]any) bool {
	if ns != nil && !t.NamespaceMatches(*ns) {
		return false
	}
	return t.ObjectMatches(gvk, name, objLabels, ns, obj)
}

// ObjectMatches is Matches for an object whose namespace passed
// NamespaceMatches: the tests of the object itself (rules, names, labels,
// the watch gate).
func (t *Set) ObjectMatches(gvk schema.GroupVersionKind, name string, objLabels labels.Labels, ns *Namespace, obj map[string]any) bool {
	set := objLabels
	if len(t.Rules) > 0 {
		matched := false
		for _, r := range t.Rules {
			if r.matches(gvk, set, ns, obj) {
				matched = true
				break
			}
		}
		if !matched {
			return false
		}
	} else {
		if len(t.Names) > 0 && !t.Names[name] {
			return false
		}
		if t.Labels != nil && !t.Labels.Matches(set) {
			return false
		}
	}
	return t.watchGate(objLabels, ns)
}

func (r *Rule) matches(gvk schema.GroupVersionKind, set labels.Labels, ns *Namespace, obj map[string]any) bool {
	if r.GVK != gvk {
		return false
	}
	if r.NamespaceSelector != nil && (ns == nil || !r.NamespaceSelector.Matches(ns.labels())) {
		return false
	}
	if r.Labels != nil && !r.Labels.Matches(set) {
		return false
	}
	return r.Policy == nil || r.Policy.Match(obj)
}

// watchGate applies the kollect.dev/watch label and annotation.
func (t *Set) watchGate(objLabels labels.Labels, ns *Namespace) bool {
	switch objLabels.Get(WatchLabel) {
	case "disabled":
		return false
	case "enabled":
		return true
	}
	nsState := ""
	if ns != nil {
		nsState = ns.labels().Get(WatchLabel)
		if a := ns.annotation(NamespaceWatchAnnot); a == "enabled" || a == "disabled" {
			if nsState != "disabled" {
				nsState = a
			}
		}
	}
	if nsState == "disabled" {
		return false
	}
	return !t.OptIn || nsState == "enabled"
}

// GVKs lists the kinds the target reads: each rule's, or the profile's.
func (t *Set) GVKs(profile schema.GroupVersionKind) []schema.GroupVersionKind {
	if len(t.Rules) == 0 {
		return []schema.GroupVersionKind{profile}
	}
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	for _, r := range t.Rules {
		if !seen[r.GVK] {
			seen[r.GVK] = true
			out = append(out, r.GVK)
		}
	}
	return out
}

// Reads is the part of an object the rules' policies read.
func (t *Set) Reads() *projection.Set {
	s := &projection.Set{}
	for _, r := range t.Rules {
		if r.Policy != nil {
			s.Merge(r.Policy.Reads())
		}
	}
	return s
}

// ObjectLabels reads an unstructured object's metadata.labels in place,
// without the copy GetLabels makes.
type ObjectLabels map[string]any

// Has implements labels.Labels.
func (l ObjectLabels) Has(k string) bool { _, ok := l[k]; return ok }

// Get implements labels.Labels.
func (l ObjectLabels) Get(k string) string { s, _ := l[k].(string); return s }

// Lookup implements labels.Labels.
func (l ObjectLabels) Lookup(k string) (string, bool) {
	v, ok := l[k]
	s, _ := v.(string)
	return s, ok
}
