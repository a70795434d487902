package validate

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/pipeline/admission"
)

// policy runs the webhooks' policy rules offline: the scopes, profiles and
// sinks of the files stand in for the cluster's (a rule that needs an
// object the files lack passes, as it would on a cluster without it).
// Private addresses are allowed (whether the operator allows them is a
// flag of the install), every other endpoint rule applies.
func (v *validator) policy(ctx context.Context, docs []doc) error {
	scheme := runtime.NewScheme()
	if err := kollectv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	var objs []client.Object
	typed := map[int]client.Object{}
	for i, d := range docs {
		if v.res.Objects[d.obj.GetKind()] == 0 {
			continue // not a Kollect kind
		}
		ro, err := scheme.New(kollectv1alpha1.GroupVersion.WithKind(d.obj.GetKind()))
		if err != nil {
			continue
		}
		obj, ok := ro.(client.Object)
		if !ok || decode(d, obj) != nil {
			continue // schema problems are reported already
		}
		typed[i] = obj
		objs = append(objs, obj.DeepCopyObject().(client.Object))
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	o := admission.Options{Policy: endpoint.Policy{AllowPrivate: true}}
	for i, d := range docs {
		obj := typed[i]
		if obj == nil {
			continue
		}
		warnings, problems := admission.Policy(ctx, c, o, obj)
		for _, w := range warnings {
			field, msg := splitField(w)
			v.add(d, field, msg, true)
		}
		for _, p := range problems {
			field, msg := splitField(p)
			v.add(d, field, msg, false)
		}
	}
	return nil
}

// splitField splits "spec.x: what" into its field and message.
func splitField(s string) (string, string) {
	if f, msg, ok := strings.Cut(s, ": "); ok && (strings.HasPrefix(f, "spec.") || strings.HasPrefix(f, "metadata.")) && !strings.Contains(f, " ") {
		return f, msg
	}
	return "", s
}
