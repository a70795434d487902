package extract_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"kollect.dev/kollect/model/extract"
)

func TestEmbed(t *testing.T) {
	obj := func() map[string]any {
		var o map[string]any
		_ = json.Unmarshal([]byte(`{"apiVersion":"apps/v1","kind":"Deployment",
		  "metadata":{"name":"web","namespace":"shop","uid":"u1","resourceVersion":"9","labels":{"pod-template-hash":"abc","app":"web"},
		    "annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},
		  "spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"a","env":[{"name":"API_TOKEN","value":"s3cret"}]}]}}},
		  "status":{"conditions":[{"type":"Available"}],"readyReplicas":2}}`), &o)
		return o
	}
	cases := []struct {
		name     string
		include  string
		pointers []string
		paths    []string
		want     string
	}{
		{"default keeps spec and status, scrubbed", "", []string{"/status/conditions"}, nil,
			`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":2,"template":{"spec":{"containers":[{"env":[{"name":"API_TOKEN","value":"s3cret"}],"name":"a"}]}}},"status":{"readyReplicas":2}}`},
		{"metadata only with identity and noise removed", "MetadataOnly", nil, []string{`$.metadata.labels["pod-template-hash"]`},
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app":"web"}}}`},
		{"a list element pointer becomes null", "StatusOnly", []string{"/status/conditions/0"}, nil,
			`{"apiVersion":"apps/v1","kind":"Deployment","status":{"conditions":[null],"readyReplicas":2}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			em, err := extract.NewEmbed("resource", tc.include, true, true, tc.pointers, tc.paths)
			if err != nil {
				t.Fatal(err)
			}
			ex, err := extract.Compile(nil, extract.NewScrubber())
			if err != nil {
				t.Fatal(err)
			}
			o := obj()
			got, err := ex.WithEmbed(em).Extract(o)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got.Get("resource"))
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
			if !reflect.DeepEqual(o, obj()) {
				t.Error("the embed modified the cached object")
			}
		})
	}
	if _, err := extract.NewEmbed("", "", true, true, []string{"status"}, nil); err == nil {
		t.Error("a pointer without a leading / must be rejected")
	}
}
