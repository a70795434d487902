package cli

import (
	"reflect"
	"testing"
)

func TestAttributeNames(t *testing.T) {
	for _, tc := range []struct {
		paths []string
		want  []string
	}{
		{[]string{"$.spec.replicas"}, []string{"replicas"}},
		{[]string{"$.spec.template.spec.containers[0].image", "$.spec.replicas"}, []string{"image", "replicas"}},
		{[]string{"$.spec.replicas", "$.status.replicas"}, []string{"specReplicas", "statusReplicas"}},
		{[]string{"$.metadata.labels", "$.spec.selector.matchLabels"}, []string{"labels", "matchLabels"}},
		{[]string{"$.a.b", "$.a.b"}, []string{"aB", "aB2"}},
		{[]string{"$.spec.containers[0].image", "$.spec.initContainers[0].image"}, []string{"containersImage", "initContainersImage"}},
	} {
		var got []string
		for _, a := range attributeNames(tc.paths) {
			got = append(got, a.name)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("attributeNames(%v) = %v, want %v", tc.paths, got, tc.want)
		}
	}
}

func TestCandidatesOfferValuesNotBookkeeping(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db", "resourceVersion": "7", "managedFields": []any{map[string]any{"manager": "kubectl"}},
			"labels": map[string]any{"app.kubernetes.io/name": "db"}},
		"data": map[string]any{"password": "czNjcmV0"},
		"spec": map[string]any{"ports": []any{map[string]any{"port": 5432}}, "empty": []any{}},
	}
	paths := func(secret bool) map[string]string {
		out := map[string]string{}
		for _, f := range candidates([]map[string]any{obj}, secret) {
			out[f.path] = f.sample
		}
		return out
	}
	got := paths(false)
	want := map[string]string{"$.apiVersion": `"v1"`, "$.kind": `"Secret"`, "$.metadata.name": `"db"`,
		"$.metadata.labels": `{"app.kubernetes.io/name":"db"}`, "$.spec.ports[0].port": "5432", "$.spec.empty": "[]"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("without the Secret confirmation: %v, want %v", got, want)
	}
	if got := paths(true); got["$.data.password"] != `"czNjcmV0"` {
		t.Errorf("with it: %v lacks $.data.password", got)
	}
}
