package admission

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/compile"
	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/pipeline/scope"
)

// profile: every attribute path compiles (CEL and JSONPath), the export
// block compiles, and the Secret guards hold.
func profile(_ context.Context, p *kollectv1alpha1.KollectProfile) (warnings, problems []string) {
	for i, a := range p.Spec.Attributes {
		if _, err := extract.Compile([]extract.Attribute{{Name: a.Name, Path: a.Path, Optional: a.Optional}}, extract.NewScrubber()); err != nil {
			problems = append(problems, fmt.Sprintf("spec.attributes[%d].path: %v", i, err))
		}
		if strings.Contains(a.Path, "[?(") {
			warnings = append(warnings, fmt.Sprintf("spec.attributes[%d].path: JSONPath filters are evaluated per object and cost more than plain paths", i))
		}
	}
	noAttrs := *p
	noAttrs.Spec.Attributes = nil
	if _, err := compile.Compile(&kollectv1alpha1.KollectTarget{}, &noAttrs, compile.Defaults{}); err != nil {
		problems = append(problems, fmt.Sprintf("spec.export: %v", err))
	}
	if err := compile.SecretGuard(p); err != nil {
		problems = append(problems, err.Error())
	}
	if x := p.Spec.Export; x != nil && x.Prune != nil {
		for i := range x.Prune.JSONPaths {
			if strings.Contains(x.Prune.JSONPaths[i], "[?(") || strings.Contains(x.Prune.JSONPaths[i], "[*]") {
				warnings = append(warnings, fmt.Sprintf("spec.export.prune.jsonPaths[%d]: filters and wildcards may prune more than intended", i))
			}
		}
	}
	return warnings, problems
}

// scopeKinds checks the kinds a target collects against a scope: each
// rule's, or the profile's when there are no rules and the profile exists.
func scopeKinds(c *scope.Ceiling, compiled *compile.Compiled, haveProfile bool) *scope.Violation {
	if compiled == nil || (len(compiled.Selection.Rules) == 0 && !haveProfile) {
		return nil
	}
	return c.CheckGVKs(compiled.GVKs())
}

func getProfile(ctx context.Context, c client.Reader, ns, name string) (*kollectv1alpha1.KollectProfile, error) {
	var p kollectv1alpha1.KollectProfile
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return &p, nil
}

// target: the selection compiles; under a KollectScope the kinds and the
// listed namespaces are within it (selector-only targets are checked at
// runtime, on the namespaces they really match).
func target(ctx context.Context, c client.Reader, o Options, t *kollectv1alpha1.KollectTarget) (warnings, problems []string) {
	if !o.policyOnly && (t.Spec.ProfileRef == "" || strings.Contains(t.Spec.ProfileRef, "/")) {
		problems = append(problems, fmt.Sprintf("spec.profileRef: %q must be the name of a KollectProfile in namespace %q", t.Spec.ProfileRef, t.Namespace))
	}
	p, err := getProfile(ctx, c, t.Namespace, t.Spec.ProfileRef)
	if err != nil {
		return nil, append(problems, err.Error())
	}
	compiled, err := compile.Selection(t, p)
	if err != nil && !o.policyOnly {
		problems = append(problems, err.Error())
	}
	if p == nil && !o.policyOnly {
		warnings = append(warnings, fmt.Sprintf("KollectProfile %q does not exist yet in namespace %q; the target waits for it", t.Spec.ProfileRef, t.Namespace))
	}
	ceiling, err := scope.Namespaced(ctx, c, t.Namespace)
	if err != nil {
		return warnings, append(problems, err.Error())
	}
	if v := scopeKinds(ceiling, compiled, p != nil); v != nil {
		problems = append(problems, v.Message)
	}
	if !o.AllNamespaces {
		ceiling = ceiling.ClosedTo(t.Namespace)
	}
	if v := ceiling.CheckNamespaces(t.Spec.IncludedNamespaces); v != nil {
		problems = append(problems, v.Message)
	}
	return warnings, problems
}

// clusterTarget: refused in tenant mode; otherwise the profile reference,
// the selection and the cluster scope.
func clusterTarget(ctx context.Context, c client.Reader, o Options, t *kollectv1alpha1.KollectClusterTarget) (warnings, problems []string) {
	if o.TenantMode {
		return nil, []string{"cluster-scoped targets are not allowed: the operator runs in tenant mode"}
	}
	ref := t.Spec.ProfileRef
	if (ref.Name == "" || ref.Namespace == "") && !o.policyOnly {
		problems = append(problems, "spec.profileRef: name and namespace are required")
	}
	if s := t.Spec.NamespaceSelector; s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0) {
		problems = append(problems, "spec.namespaceSelector: required, and must not be empty (it would select every namespace)")
	}
	p, err := getProfile(ctx, c, ref.Namespace, ref.Name)
	if err != nil {
		return nil, append(problems, err.Error())
	}
	kindOnly := kollectv1alpha1.KollectProfile{}
	if p != nil {
		kindOnly.Spec.TargetGVK = p.Spec.TargetGVK
	}
	compiled, err := compile.ClusterTarget(t, &kindOnly, compile.Defaults{})
	if err != nil && !o.policyOnly {
		problems = append(problems, err.Error())
	}
	ceiling, err := scope.Cluster(ctx, c)
	if err != nil {
		return nil, append(problems, err.Error())
	}
	if v := ceiling.CheckStaticRef("profileRef", ref.Namespace, scope.ReasonNamespaceDenied); v != nil {
		problems = append(problems, v.Message)
	}
	if v := scopeKinds(ceiling, compiled, p != nil); v != nil {
		problems = append(problems, v.Message)
	}
	if v := ceiling.CheckNamespaces(t.Spec.IncludedNamespaces); v != nil {
		problems = append(problems, v.Message)
	}
	return warnings, problems
}
