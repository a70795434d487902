package extract_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"kollect.dev/kollect/model/extract"
)

func deployment() map[string]any {
	var obj map[string]any
	_ = json.Unmarshal([]byte(`{
	  "apiVersion": "apps/v1", "kind": "Deployment",
	  "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "shop"}},
	  "spec": {"replicas": 3, "template": {"spec": {"containers": [
	    {"name": "a", "image": "nginx:1.27", "env": [{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}]},
	    {"name": "b", "image": "busybox:1"}]}}},
	  "status": {"readyReplicas": 2}
	}`), &obj)
	return obj
}

func TestExtract(t *testing.T) {
	cases := []struct {
		name    string
		attr    extract.Attribute
		want    any
		absent  bool
		wantErr string
		noScrub bool
	}{
		{name: "dollar path", attr: extract.Attribute{Name: "v", Path: "$.spec.replicas"}, want: float64(3)},
		{name: "template path", attr: extract.Attribute{Name: "v", Path: "{.metadata.name}"}, want: "web"},
		{name: "index", attr: extract.Attribute{Name: "v", Path: "$.spec.template.spec.containers[0].image"}, want: "nginx:1.27"},
		{name: "wildcard with several results is a list", attr: extract.Attribute{Name: "v", Path: "$.spec.template.spec.containers[*].image"}, want: []any{"nginx:1.27", "busybox:1"}},
		{name: "filter", attr: extract.Attribute{Name: "v", Path: `{.spec.template.spec.containers[?(@.name=="b")].image}`}, want: "busybox:1"},
		{name: "missing field is null", attr: extract.Attribute{Name: "v", Path: "$.spec.paused"}, want: nil},
		{name: "missing optional field is omitted", attr: extract.Attribute{Name: "v", Path: "$.spec.paused", Optional: true}, absent: true},
		{name: "cel", attr: extract.Attribute{Name: "v", Path: "cel:size(object.spec.template.spec.containers)"}, want: int64(2)},
		{name: "cel conditional", attr: extract.Attribute{Name: "v", Path: "cel:has(object.status.readyReplicas) ? object.status.readyReplicas : 0"}, want: float64(2)},
		{name: "cel missing key is an error", attr: extract.Attribute{Name: "v", Path: "cel:object.spec.paused"}, wantErr: `attribute "v"`},
		{name: "cel missing key optional is omitted", attr: extract.Attribute{Name: "v", Path: "cel:object.spec.paused", Optional: true}, absent: true},
		{name: "cel list result", attr: extract.Attribute{Name: "v", Path: "cel:object.spec.template.spec.containers.map(c, c.name)"}, want: []any{"a", "b"}},
		{name: "map value is scrubbed", attr: extract.Attribute{Name: "v", Path: "$.spec.template.spec.containers[0].env[0]"},
			want: map[string]any{"name": "DB_PASSWORD", "valueFrom": map[string]any{"redacted": true, "reason": "sensitive-key"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := extract.Compile([]extract.Attribute{tc.attr}, extract.NewScrubber())
			if err != nil {
				t.Fatal(err)
			}
			obj := deployment()
			got, err := e.Extract(obj)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error %q, got %v (%v)", tc.wantErr, err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v, ok := got.Lookup(tc.attr.Name)
			if tc.absent {
				if ok {
					t.Fatalf("want attribute omitted, got %v", v)
				}
				return
			}
			if !ok || !reflect.DeepEqual(v, tc.want) {
				t.Fatalf("want %#v, got %#v (present %v)", tc.want, v, ok)
			}
			if !reflect.DeepEqual(obj, deployment()) {
				t.Fatal("extraction modified the object")
			}
		})
	}
}

func TestCompileErrorsNameTheAttribute(t *testing.T) {
	cases := []struct{ path, want string }{
		{"cel:object.spec.(", "invalid CEL"},
		{"object.metadata.name", "cel: prefix"},
		{"{.spec[}", "invalid JSONPath"},
		{"helm:release.manifest", "not exportable"},
	}
	for _, tc := range cases {
		_, err := extract.Compile([]extract.Attribute{{Name: "broken", Path: tc.path}}, nil)
		if err == nil || !strings.Contains(err.Error(), `attribute "broken"`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want an error naming the attribute and %q, got %v", tc.path, tc.want, err)
		}
	}
}

func TestConditionMatch(t *testing.T) {
	c, err := extract.CompileCondition("object.spec.replicas > 1")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Match(deployment()) {
		t.Error("want match for replicas 3")
	}
	bad, _ := extract.CompileCondition("object.spec.missing > 1")
	if bad.Match(deployment()) {
		t.Error("an evaluation error must be no match")
	}
}

// Rows keep attributes in name order, each name once: a profile declaring
// them in another order, or one name twice, gives the order and the last
// declaration's value.
func TestAttributesComeInNameOrderAndTheLastOfANameWins(t *testing.T) {
	e, err := extract.Compile([]extract.Attribute{
		{Name: "zeta", Path: "$.metadata.name"},
		{Name: "alpha", Path: "$.spec.replicas"},
		{Name: "mid", Path: "$.metadata.namespace"},
		{Name: "alpha", Path: "cel:object.metadata.name + '!'"},
		{Name: "gone", Path: "$.spec.nothing", Optional: true},
	}, extract.NewScrubber())
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Extract(deployment())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range got {
		names = append(names, a.Name)
	}
	if strings.Join(names, ",") != "alpha,mid,zeta" || !got.Sorted() {
		t.Fatalf("names %v", names)
	}
	if name, _ := got.Get("zeta").(string); got.Get("alpha") != name+"!" {
		t.Fatalf("alpha = %v, want the last declaration's value", got.Get("alpha"))
	}
}
