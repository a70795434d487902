package compile

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

func TestSecretGuard(t *testing.T) {
	secret := kollectv1alpha1.GroupVersionKind{Version: "v1", Kind: "Secret"}
	cases := []struct {
		name        string
		gvk         kollectv1alpha1.GroupVersionKind
		annotations map[string]string
		path        string
		resource    bool
		refused     string // a word of the error, or "" when accepted
	}{
		{"data by JSONPath", secret, nil, "$.data.password", false, "allow-secret-extraction"},
		{"data by bracket", secret, nil, "$['data']", false, "allow-secret-extraction"},
		{"data, upper case", secret, nil, "$.Data", false, "allow-secret-extraction"},
		{"stringData", secret, nil, "$.stringData.x", false, "allow-secret-extraction"},
		{"whole object", secret, nil, "$", false, "allow-secret-extraction"},
		{"recursive descent", secret, nil, "$..password", false, "allow-secret-extraction"},
		{"wildcard", secret, nil, "$.*", false, "allow-secret-extraction"},
		{"data by CEL", secret, nil, "cel:object.data['password']", false, "allow-secret-extraction"},
		{"whole object by CEL", secret, nil, "cel:object", false, "allow-secret-extraction"},
		{"CEL map over the object", secret, nil, "cel:object.map(k, k)", false, "allow-secret-extraction"},
		{"Helm values", secret, nil, "helm:release.config", false, "allow-secret-extraction"},
		{"Helm values below", secret, nil, "helm:release.config.db", false, "allow-secret-extraction"},
		{"metadata", secret, nil, "$.metadata.name", false, ""},
		{"type", secret, nil, "{.type}", false, ""},
		{"metadata by CEL", secret, nil, "cel:object.metadata.name + object.type", false, ""},
		{"Helm chart version", secret, nil, "helm:release.chartVersion", false, ""},
		{"opted in", secret, map[string]string{AllowSecretExtraction: "True"}, "$.data.password", false, ""},
		{"core group spelled out", kollectv1alpha1.GroupVersionKind{Group: "core", Version: "v1", Kind: "Secret"}, nil, "$.data", false, "allow-secret-extraction"},
		{"other kinds are free", kollectv1alpha1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, nil, "$.data.x", false, ""},
		{"whole Secrets", secret, map[string]string{AllowSecretExtraction: "true"}, "$.metadata.name", true, "allow-full-resource-export"},
		{"whole Secrets opted in", secret, map[string]string{AllowFullResourceExport: "true"}, "$.metadata.name", true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &kollectv1alpha1.KollectProfile{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: tc.annotations}}
			p.Spec.TargetGVK = tc.gvk
			p.Spec.Attributes = []kollectv1alpha1.ProfileAttribute{{Name: "a", Path: tc.path}}
			if tc.resource {
				p.Spec.Export = &kollectv1alpha1.ExportSpec{Mode: "Resource"}
			}
			err := SecretGuard(p)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("want an error naming %s, got %v", tc.refused, err)
			}
		})
	}
}
