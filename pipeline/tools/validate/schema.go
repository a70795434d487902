package validate

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"kollect.dev/kollect/deploy/crds"
)

// kindSchema validates objects of one kind and version.
type kindSchema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// schemas are the compiled CRD schemas, by group/version/kind.
type schemas map[schema.GroupVersionKind]*kindSchema

func loadSchemas() (schemas, error) {
	out := schemas{}
	err := crds.Each(func(f string, data []byte) error {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			var internal apiextensions.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				return fmt.Errorf("%s: convert schema: %w", f, err)
			}
			st, err := structuralschema.NewStructural(&internal)
			if err != nil {
				return fmt.Errorf("%s: structural schema: %w", f, err)
			}
			sv, _, err := apiservervalidation.NewSchemaValidator(&internal)
			if err != nil {
				return fmt.Errorf("%s: schema validator: %w", f, err)
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			out[gvk] = &kindSchema{structural: st, validator: sv, cel: cel.NewValidator(st, true, celconfig.PerCallLimit)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// check defaults obj in place (as the API server does before validation)
// and returns what the schema, its unknown-field pruning and its CEL rules
// reject.
func (k *kindSchema) check(ctx context.Context, obj map[string]any) field.ErrorList {
	var errs field.ErrorList
	structuraldefaulting.Default(obj, k.structural)
	pruned := runtime.DeepCopyJSON(obj)
	for _, p := range pruning.PruneWithOptions(pruned, k.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		if p == "metadata" || len(p) > 9 && p[:9] == "metadata." {
			continue
		}
		errs = append(errs, field.Invalid(field.NewPath(p), nil, "unknown field"))
	}
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, k.validator)...)
	celErrs, _ := k.cel.Validate(ctx, nil, k.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}
