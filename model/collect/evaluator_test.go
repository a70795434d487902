package collect_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kollect.dev/kollect/model/collect"
	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/model/selection"
)

// Row reads an object's identity as unstructured's getters do, tests a
// cluster-scoped object as if it lived in "default" while its row keeps no
// namespace, and gives a per-namespace target's rows the object's
// namespace.
func TestRowReadsTheObjectsIdentity(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	ex, err := extract.Compile([]extract.Attribute{{Name: "v", Path: "$.data.v"}}, extract.NewScrubber())
	if err != nil {
		t.Fatal(err)
	}
	obj := func(metadata map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"metadata": metadata, "data": map[string]any{"v": "x"}}}
	}
	onlyDefault := &selection.Set{Included: map[string]bool{"default": true}}
	for _, tc := range []struct {
		name                            string
		perNamespace                    bool
		sel                             *selection.Set
		obj                             *unstructured.Unstructured
		selected                        bool
		targetNS, namespace, rname, uid string
	}{
		{name: "namespaced", sel: &selection.Set{}, obj: obj(map[string]any{"namespace": "shop", "name": "cm", "uid": "u1"}),
			selected: true, targetNS: "team", namespace: "shop", rname: "cm", uid: "u1"},
		{name: "cluster-scoped is tested in default", sel: onlyDefault, obj: obj(map[string]any{"name": "node-1", "uid": "u2"}),
			selected: true, targetNS: "team", rname: "node-1", uid: "u2"},
		{name: "a namespace outside the selection", sel: onlyDefault, obj: obj(map[string]any{"namespace": "shop", "name": "cm", "uid": "u1"})},
		{name: "per-namespace target", perNamespace: true, sel: &selection.Set{}, obj: obj(map[string]any{"namespace": "shop", "name": "cm", "uid": "u1"}),
			selected: true, targetNS: "shop", namespace: "shop", rname: "cm", uid: "u1"},
		{name: "identity that is not a string reads as empty", sel: &selection.Set{}, obj: obj(map[string]any{"namespace": 7, "name": "cm", "uid": true}),
			selected: true, targetNS: "team", rname: "cm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &collect.Evaluator{TargetNamespace: "team", TargetName: "t", PerNamespace: tc.perNamespace, ProfileGVK: gvk, Selection: tc.sel, Extractor: ex}
			r, err := e.Row(gvk, tc.obj, func(string) *unstructured.Unstructured { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if (r != nil) != tc.selected {
				t.Fatalf("selected %v, want %v", r != nil, tc.selected)
			}
			if r == nil {
				return
			}
			if r.TargetNamespace != tc.targetNS || r.TargetName != "t" || r.Namespace != tc.namespace || r.Name != tc.rname || r.UID != tc.uid || r.Kind != "ConfigMap" {
				t.Errorf("row %s/%s %s/%s uid %q kind %s", r.TargetNamespace, r.TargetName, r.Namespace, r.Name, r.UID, r.Kind)
			}
			if r.Namespace != tc.obj.GetNamespace() || r.Name != tc.obj.GetName() || r.UID != string(tc.obj.GetUID()) {
				t.Errorf("row identity differs from unstructured's getters")
			}
		})
	}
}

// Rows of one target and kind share one Origin; a per-namespace target's
// rows of another namespace have their own.
func TestRowsShareTheirOrigin(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	ex, err := extract.Compile(nil, extract.NewScrubber())
	if err != nil {
		t.Fatal(err)
	}
	e := &collect.Evaluator{TargetNamespace: "team", TargetName: "t", PerNamespace: true, ProfileGVK: gvk, Selection: &selection.Set{}, Extractor: ex}
	row := func(ns, name string) *rows.Row {
		r, err := e.Row(gvk, &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"namespace": ns, "name": name, "uid": ns + name}}},
			func(string) *unstructured.Unstructured { return nil })
		if err != nil || r == nil {
			t.Fatalf("row %s/%s: %v", ns, name, err)
		}
		return r
	}
	a, b, c := row("shop", "a"), row("shop", "b"), row("cart", "c")
	if a.Origin != b.Origin {
		t.Error("two rows of one namespace have their own Origin")
	}
	if a.Origin == c.Origin || c.TargetNamespace != "cart" || a.TargetNamespace != "shop" {
		t.Errorf("rows of two namespaces: origins %p %p, target namespaces %s %s", a.Origin, c.Origin, a.TargetNamespace, c.TargetNamespace)
	}
}

// Objects turned away by their namespace are counted by kind, once;
// objects turned away by their own labels are not.
func TestRowCountsObjectsOfNamespacesTheTargetDoesNotRead(t *testing.T) {
	cms, secrets := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	ex, err := extract.Compile(nil, extract.NewScrubber())
	if err != nil {
		t.Fatal(err)
	}
	appX, err := labels.Parse("app=x")
	if err != nil {
		t.Fatal(err)
	}
	e := &collect.Evaluator{TargetNamespace: "team", TargetName: "t", ProfileGVK: cms, Extractor: ex,
		Selection: &selection.Set{Included: map[string]bool{"team": true}, Labels: appX}}
	obj := func(ns string, lbl map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"namespace": ns, "name": "o", "uid": ns, "labels": lbl}}}
	}
	none := func(string) *unstructured.Unstructured { return nil }
	for _, tc := range []struct {
		gvk      schema.GroupVersionKind
		obj      *unstructured.Unstructured
		selected bool
	}{
		{cms, obj("team", map[string]any{"app": "x"}), true},
		{cms, obj("team", map[string]any{"app": "y"}), false},
		{cms, obj("other", map[string]any{"app": "x"}), false},
		{cms, obj("another", nil), false},
		{secrets, obj("other", nil), false},
	} {
		if r, err := e.Row(tc.gvk, tc.obj, none); err != nil || (r != nil) != tc.selected {
			t.Fatalf("%s in %s: row %v, error %v", tc.gvk.Kind, tc.obj.GetNamespace(), r, err)
		}
	}
	if got := e.TakeMismatches(); len(got) != 2 || got[cms] != 2 || got[secrets] != 1 {
		t.Errorf("mismatches %v, want 2 ConfigMaps and 1 Secret", got)
	}
	if got := e.TakeMismatches(); got != nil {
		t.Errorf("taken again: %v", got)
	}
}
