package selection_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/selection"
)

var deploy = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

func sel(s string) labels.Selector {
	l, err := labels.Parse(s)
	if err != nil {
		panic(err)
	}
	return l
}

func TestMatches(t *testing.T) {
	policy, err := extract.CompileCondition("object.spec.replicas > 1")
	if err != nil {
		t.Fatal(err)
	}
	demo := &selection.Namespace{Name: "demo", Labels: labels.Set{"kubernetes.io/metadata.name": "demo"}}
	optedIn := &selection.Namespace{Name: "in", Labels: labels.Set{"kollect.dev/watch": "enabled"}}
	annotatedOff := &selection.Namespace{Name: "off", Annotations: labels.Set{"kollect.dev/namespace-watch": "disabled"}}
	obj := map[string]any{"spec": map[string]any{"replicas": int64(3)}}
	cases := []struct {
		name   string
		target selection.Set
		gvk    schema.GroupVersionKind
		labels map[string]string
		ns     *selection.Namespace
		want   bool
	}{
		{"no selectors collects everything", selection.Set{}, deploy, nil, demo, true},
		{"namespace selector matches", selection.Set{NamespaceSelector: sel("kubernetes.io/metadata.name=demo")}, deploy, nil, demo, true},
		{"namespace selector misses", selection.Set{NamespaceSelector: sel("kubernetes.io/metadata.name=other")}, deploy, nil, demo, false},
		{"included list", selection.Set{Included: map[string]bool{"other": true}}, deploy, nil, demo, false},
		{"excluded list", selection.Set{Excluded: map[string]bool{"demo": true}}, deploy, nil, demo, false},
		{"label selector", selection.Set{Labels: sel("app=shop")}, deploy, map[string]string{"app": "shop"}, demo, true},
		{"label selector misses", selection.Set{Labels: sel("app=shop")}, deploy, map[string]string{"app": "web"}, demo, false},
		{"names", selection.Set{Names: map[string]bool{"other": true}}, deploy, nil, demo, false},
		{"object opts out", selection.Set{}, deploy, map[string]string{"kollect.dev/watch": "disabled"}, demo, false},
		{"OptIn needs an opted-in namespace", selection.Set{OptIn: true}, deploy, nil, demo, false},
		{"OptIn namespace label", selection.Set{OptIn: true}, deploy, nil, optedIn, true},
		{"OptIn object label", selection.Set{OptIn: true}, deploy, map[string]string{"kollect.dev/watch": "enabled"}, demo, true},
		{"namespace annotation disables", selection.Set{}, deploy, nil, annotatedOff, false},
		{"rule with policy", selection.Set{Rules: []selection.Rule{{GVK: deploy, Policy: policy}}}, deploy, nil, demo, true},
		{"rule of another kind", selection.Set{Rules: []selection.Rule{{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Service"}}}}, deploy, nil, demo, false},
		{"rules ignore the legacy selector", selection.Set{Labels: sel("app=x"), Rules: []selection.Rule{{GVK: deploy}}}, deploy, nil, demo, true},
		{"rule labels OR-ed", selection.Set{Rules: []selection.Rule{{GVK: deploy, Labels: sel("tier=a")}, {GVK: deploy, Labels: sel("tier=b")}}}, deploy, map[string]string{"tier": "b"}, demo, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.target.Matches(tc.gvk, "web", labels.Set(tc.labels), tc.ns, obj); got != tc.want {
				t.Fatalf("want %v, got %v", tc.want, got)
			}
		})
	}
}

// A namespace's name alone rules it out only through the allow-list, the
// ceiling or the exclusions; a label selector never does (labels change).
func TestMayMatchNamespace(t *testing.T) {
	onlyOwn := func(ns string) bool { return ns == "own" }
	cases := []struct {
		name   string
		target selection.Set
		ns     string
		want   bool
	}{
		{"no name filter", selection.Set{}, "any", true},
		{"label selector alone", selection.Set{NamespaceSelector: sel("team=a")}, "any", true},
		{"in the allow-list", selection.Set{Included: map[string]bool{"a": true}}, "a", true},
		{"outside the allow-list", selection.Set{Included: map[string]bool{"a": true}}, "b", false},
		{"excluded", selection.Set{Excluded: map[string]bool{"b": true}}, "b", false},
		{"inside the ceiling", selection.Set{Within: onlyOwn}, "own", true},
		{"outside the ceiling", selection.Set{Within: onlyOwn, NamespaceSelector: sel("team=a")}, "other", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.target.MayMatchNamespace(c.ns); got != c.want {
				t.Errorf("MayMatchNamespace(%q) = %v, want %v", c.ns, got, c.want)
			}
			if !c.want && c.target.NamespaceMatches(selection.Namespace{Name: c.ns}) {
				t.Errorf("NamespaceMatches(%q) is true where the name rules it out", c.ns)
			}
		})
	}
}
