//go:build integration

package v1alpha1_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
	"kollect.dev/kollect/internal/eventually"
)

// TestEveryFieldHasADescription walks every Kollect CRD schema: each
// property must say what it is for, so `kubectl explain --recursive` reads
// well.
func TestEveryFieldHasADescription(t *testing.T) {
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := env.Client.List(ctx(t), &crds); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, crd := range crds.Items {
		if crd.Spec.Group != "kollect.dev" {
			continue
		}
		root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		for name, prop := range root.Properties {
			if name == "apiVersion" || name == "kind" || name == "metadata" {
				continue
			}
			checked += walkDescriptions(t, crd.Spec.Names.Kind+"."+name, prop)
		}
	}
	if checked < 500 {
		t.Errorf("walked only %d fields; the schemas look truncated", checked)
	}
}

func walkDescriptions(t *testing.T, path string, s apiextensionsv1.JSONSchemaProps) int {
	t.Helper()
	if strings.TrimSpace(s.Description) == "" {
		t.Errorf("%s has no description", path)
	}
	n := 1
	for name, prop := range s.Properties {
		n += walkDescriptions(t, path+"."+name, prop)
	}
	if s.Items != nil && s.Items.Schema != nil {
		// Items share their list's description; their fields need their own.
		for name, prop := range s.Items.Schema.Properties {
			n += walkDescriptions(t, path+"[]."+name, prop)
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		for name, prop := range s.AdditionalProperties.Schema.Properties {
			n += walkDescriptions(t, path+"{}."+name, prop)
		}
	}
	return n
}

// TestPublishedOpenAPIDescribesNestedFields reads the OpenAPI v3 document
// the API server publishes for kollect.dev (what kubectl explain shows).
func TestPublishedOpenAPIDescribesNestedFields(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The API server publishes a CRD's OpenAPI document asynchronously,
	// some time after the CRD is Established; poll for it.
	var gv openapi.GroupVersion
	eventually.Check(t, time.Minute, "the OpenAPI v3 document for apis/kollect.dev/v1alpha1 is published", func() error {
		paths, err := dc.OpenAPIV3().Paths()
		if err != nil {
			return err
		}
		var ok bool
		if gv, ok = paths["apis/kollect.dev/v1alpha1"]; !ok {
			return errors.New("not listed yet")
		}
		return nil
	})
	raw, err := gv.Schema("application/json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		schema string
		path   []string
		want   string
	}{
		{"dev.kollect.v1alpha1.KollectInventory", []string{"spec", "exportMinInterval"}, "debounce"},
		{"dev.kollect.v1alpha1.KollectSnapshotSink", []string{"spec", "git", "auth", "type"}, "ssh"},
		{"dev.kollect.v1alpha1.KollectProfile", []string{"spec", "export", "prune", "jsonPointers"}, "RFC 6901"},
		{"dev.kollect.v1alpha1.KollectTarget", []string{"spec", "watchMode"}, "OptIn"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(append([]string{tc.schema}, tc.path...), "."), func(t *testing.T) {
			raw, ok := doc.Components.Schemas[tc.schema]
			if !ok {
				t.Fatalf("schema %s not published", tc.schema)
			}
			node := map[string]any{}
			if err := json.Unmarshal(raw, &node); err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.path {
				props, _ := node["properties"].(map[string]any)
				next, ok := props[p].(map[string]any)
				if !ok {
					t.Fatalf("no property %q", p)
				}
				node = next
			}
			if d, _ := node["description"].(string); !strings.Contains(d, tc.want) {
				t.Errorf("description %q does not mention %q", d, tc.want)
			}
		})
	}
}
