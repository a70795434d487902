package projection_test

import (
	"reflect"
	"testing"

	"kollect.dev/kollect/model/projection"
)

func TestPruneKeepsOnlyTheSet(t *testing.T) {
	object := func() map[string]any {
		return map[string]any{
			"kind":     "ConfigMap",
			"metadata": map[string]any{"name": "a", "uid": "u", "creationTimestamp": "t", "labels": map[string]any{"x": "y"}},
			"data":     map[string]any{"keep": "1", "drop": "2"},
			"spec":     map[string]any{"list": []any{map[string]any{"a": 1}}},
		}
	}
	cases := []struct {
		name string
		set  *projection.Set
		want map[string]any
	}{
		{"nothing", projection.Of(), map[string]any{}},
		{"all", projection.All(), object()},
		{"empty path is all", projection.Of([]string{}), object()},
		{"one leaf", projection.Of([]string{"data", "keep"}), map[string]any{"data": map[string]any{"keep": "1"}}},
		{"subtree", projection.Of([]string{"metadata", "labels"}, []string{"kind"}),
			map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"labels": map[string]any{"x": "y"}}}},
		{"list kept whole when a path goes through it", projection.Of([]string{"spec", "list", "a"}),
			map[string]any{"spec": map[string]any{"list": []any{map[string]any{"a": 1}}}}},
		{"missing fields stay missing", projection.Of([]string{"status", "phase"}, []string{"data", "nope"}),
			map[string]any{"data": map[string]any{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := object()
			got := tc.set.Prune(obj)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Prune = %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(obj, tc.want) {
				t.Errorf("Prune did not work in place: %v", obj)
			}
		})
	}
}

func TestCoversAndMerge(t *testing.T) {
	base := projection.Base()
	data := projection.Of([]string{"data", "version"})
	cases := []struct {
		name string
		s, o *projection.Set
		want bool
	}{
		{"all covers anything", projection.All(), base, true},
		{"a set covers itself", base, projection.Base(), true},
		{"a set covers nothing", data, projection.Of(), true},
		{"a subtree covers its leaves", projection.Of([]string{"data"}), data, true},
		{"a leaf does not cover its parent", data, projection.Of([]string{"data"}), false},
		{"a set does not cover more fields", base, data, false},
		{"only all covers all", base, projection.All(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Covers(tc.o); got != tc.want {
				t.Errorf("%s covers %s = %v, want %v", tc.s, tc.o, got, tc.want)
			}
		})
	}
	m := projection.Base()
	m.Merge(data)
	if !m.Covers(base) || !m.Covers(data) {
		t.Errorf("merge %s lost a path", m)
	}
	m.Merge(projection.All())
	if m.String() != "*" {
		t.Errorf("merging all gives %s", m)
	}
}
