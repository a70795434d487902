package validate

import (
	"fmt"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/compile"
	"kollect.dev/kollect/model/extract"
)

// semantics runs the operator's own compilers on a document: what would
// degrade a target or an inventory at reconcile time fails here.
func (v *validator) semantics(d doc) {
	switch d.obj.GetKind() {
	case "KollectProfile":
		var p kollectv1alpha1.KollectProfile
		if err := decode(d, &p); err != nil {
			v.add(d, "", err.Error(), false)
			return
		}
		v.profiles[p.Namespace+"/"+p.Name] = &p
		if err := compile.SecretGuard(&p); err != nil {
			v.add(d, "", err.Error(), false)
		}
		for i, a := range p.Spec.Attributes {
			if _, err := extract.Compile([]extract.Attribute{{Name: a.Name, Path: a.Path, Optional: a.Optional}}, extract.NewScrubber()); err != nil {
				v.add(d, fmt.Sprintf("spec.attributes[%d].path", i), err.Error(), false)
			}
		}
		// The full-resource export settings compile with the profile.
		noAttrs := p
		noAttrs.Spec.Attributes = nil
		if _, err := compile.Compile(&kollectv1alpha1.KollectTarget{}, &noAttrs, compile.Defaults{}); err != nil {
			v.add(d, "spec.export", err.Error(), false)
		}
	case "KollectTarget":
		v.targets = append(v.targets, d)
	case "KollectInventory":
		var inv kollectv1alpha1.KollectInventory
		if err := decode(d, &inv); err != nil {
			v.add(d, "", err.Error(), false)
			return
		}
		if err := compile.CheckRefs(inv.Spec.SinkRefs, inv.Namespace, false); err != nil {
			v.add(d, "", err.Error(), false)
		}
	case "KollectClusterInventory":
		var ci kollectv1alpha1.KollectClusterInventory
		if err := decode(d, &ci); err != nil {
			v.add(d, "", err.Error(), false)
			return
		}
		if err := compile.CheckRefs(ci.Spec.SinkRefs, ci.Spec.SinkNamespace, true); err != nil {
			v.add(d, "", err.Error(), false)
		}
	}
}

// references checks what one document names in another, where the other
// is among the files: a target with its profile compiles as the operator
// would compile it. A reference to an object outside the files is only a
// warning, since it may exist in the cluster.
func (v *validator) references(d doc) {
	if d.obj.GetKind() != "KollectTarget" {
		return
	}
	var t kollectv1alpha1.KollectTarget
	if err := decode(d, &t); err != nil {
		return
	}
	ns := t.Namespace
	p := v.profiles[ns+"/"+t.Spec.ProfileRef]
	if p == nil {
		v.add(d, "spec.profileRef", fmt.Sprintf("KollectProfile %s/%s is not in the given files; not checked", ns, t.Spec.ProfileRef), true)
		return
	}
	// Attributes and export settings were checked with the profile; only
	// the target's own selection is compiled here.
	if _, err := compile.Selection(&t, p); err != nil {
		v.add(d, "", err.Error(), false)
	}
}
