package extract_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"kollect.dev/kollect/model/extract"
)

// FuzzExtract compiles arbitrary JSONPath and CEL attributes and evaluates
// them on arbitrary objects: nothing panics, and evaluating twice gives the
// same result (the compiled program keeps no state between objects).
func FuzzExtract(f *testing.F) {
	obj := `{"metadata":{"name":"web","labels":{"app":"shop"}},"spec":{"replicas":3,"containers":[{"image":"a"},{"image":"b"}]}}`
	for _, p := range []string{"$.spec.replicas", "{.metadata.name}", "$.spec.containers[*].image", `{.spec.containers[?(@.image=="b")].image}`,
		"cel:object.spec.replicas * 2", "cel:object.spec.containers.map(c, c.image)", "cel:has(object.status) ? 1 : 0", "$..image",
		"cel:object.spec.containers.all(c, c.image.startsWith('a'))", "$[", "cel:(", "{range .spec.containers[*]}{.image}{end}"} {
		f.Add(p, obj)
	}
	f.Fuzz(func(t *testing.T, path, object string) {
		var o map[string]any
		if json.Unmarshal([]byte(object), &o) != nil {
			return
		}
		e, err := extract.Compile([]extract.Attribute{{Name: "v", Path: path}}, extract.NewScrubber())
		if err != nil {
			return
		}
		first, err1 := e.Extract(o)
		again, err2 := e.Extract(o)
		if (err1 == nil) != (err2 == nil) || !reflect.DeepEqual(first, again) {
			t.Fatalf("two evaluations differ: %v (%v) then %v (%v)", first, err1, again, err2)
		}
	})
}
