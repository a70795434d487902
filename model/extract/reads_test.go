package extract_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"kollect.dev/kollect/model/extract"
)

const projectedDeployment = `{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "web", "namespace": "shop", "uid": "1", "labels": {"app": "web"},
    "annotations": {"team": "a"}, "creationTimestamp": "2026-01-01T00:00:00Z"},
  "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
    "template": {"metadata": {"labels": {"app": "web", "version": "v2"}},
      "spec": {"containers": [{"name": "app", "image": "shop/web:2.0", "ports": [{"containerPort": 80}]},
                              {"name": "sidecar", "image": "proxy:1"}]}}},
  "status": {"readyReplicas": 2, "conditions": [{"type": "Available", "status": "True"}]}
}`

// TestProjectedObjectsGiveTheSameValues: for each path, the value read from
// the object reduced to what the path reads equals the value read from
// the whole object, and the reduction keeps what the case expects.
func TestProjectedObjectsGiveTheSameValues(t *testing.T) {
	object := func() map[string]any {
		var obj map[string]any
		if err := json.Unmarshal([]byte(projectedDeployment), &obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	cases := []struct {
		path string
		want string // the kept paths
	}{
		{"$.spec.replicas", "spec.replicas"},
		{"$.spec.template.spec.containers[0].image", "spec.template.spec.containers"},
		{"{.spec.template.spec.containers[*].image}", "spec.template.spec.containers"},
		{"{.status.conditions[?(@.type==\"Available\")].status}", "status.conditions"},
		{"{..image}", "*"},
		{"$.metadata.labels.app", "metadata.labels.app"},
		{"cel:object.spec.replicas * 2", "spec.replicas"},
		{"cel:object.metadata.labels['app'] + '-' + string(object.status.readyReplicas)", "metadata.labels.app,status.readyReplicas"},
		{"cel:object.spec.template.spec.containers.map(c, c.image)", "spec.template.spec.containers"},
		{"cel:has(object.status.readyReplicas) ? object.status.readyReplicas : 0", "status.readyReplicas"},
		{"cel:object.spec.template.spec.containers[0].name", "spec.template.spec.containers"},
		{"cel:object", "*"},
		{"cel:object.exists(k, k == 'spec')", "*"},
		{"cel:object[object.kind == 'Deployment' ? 'spec' : 'status']", "*"},
		{"cel:size(object.metadata)", "metadata"},
		{"helm:release.chartVersion", "data.release"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			ex, err := extract.Compile([]extract.Attribute{{Name: "v", Path: tc.path, Optional: true}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			reads := ex.Reads()
			if got := reads.String(); got != tc.want {
				t.Errorf("reads %s, want %s", got, tc.want)
			}
			full, err := ex.Extract(object())
			if err != nil {
				t.Fatal(err)
			}
			reduced, err := ex.Extract(reads.Prune(object()))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(full, reduced) {
				t.Errorf("whole object gives %v, reduced object gives %v", full, reduced)
			}
		})
	}
}

func TestConditionReads(t *testing.T) {
	c, err := extract.CompileCondition("object.spec.replicas > 1 && object.metadata.namespace != 'kube-system'")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Reads().String(); got != "metadata.namespace,spec.replicas" {
		t.Errorf("reads %s", got)
	}
}

func TestEmbedReadsAll(t *testing.T) {
	em, err := extract.NewEmbed("resource", "", false, true, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := extract.Compile(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ex.WithEmbed(em).Reads().String(); got != "*" {
		t.Error("a Resource-export profile must keep the whole object")
	}
}
