package compile

import (
	"fmt"
	"regexp"
	"strings"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// Opt-in annotations a profile on core Secrets needs.
const (
	AllowSecretExtraction   = "kollect.dev/allow-secret-extraction"
	AllowFullResourceExport = "kollect.dev/allow-full-resource-export"
)

var (
	identifiers = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	celObject   = regexp.MustCompile(`\bobject\b\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*["']([^"']*)["']\s*\])?`)
	firstField  = regexp.MustCompile(`^(?:\.?([A-Za-z_][A-Za-z0-9_]*)|\[\s*['"]([^'"]+)['"]\s*\])`)
	// Fields of a Secret that hold no Secret data.
	safeSecretFields = map[string]bool{"metadata": true, "type": true, "kind": true, "apiversion": true, "immutable": true}
)

func opted(p *kollectv1alpha1.KollectProfile, annotation string) bool {
	return strings.EqualFold(strings.TrimSpace(p.Annotations[annotation]), "true")
}

// IsCoreSecret reports whether a profile collects core Secrets.
func IsCoreSecret(g kollectv1alpha1.GroupVersionKind) bool {
	return (g.Group == "" || strings.EqualFold(g.Group, "core")) && g.Kind == "Secret"
}

// SecretGuard refuses a profile on core Secrets that could export Secret
// data without its owner's opt-in: an attribute reading `data` (or
// `stringData`), the whole object, a wildcard or a recursive descent, or
// Helm release values, without kollect.dev/allow-secret-extraction; a
// full-resource export without kollect.dev/allow-full-resource-export. The
// webhook and the target controller both apply it, so a profile admitted
// while webhooks were off still collects nothing it should not.
func SecretGuard(p *kollectv1alpha1.KollectProfile) error {
	if !IsCoreSecret(p.Spec.TargetGVK) {
		return nil
	}
	if !opted(p, AllowSecretExtraction) {
		for i, a := range p.Spec.Attributes {
			if readsSecretData(a.Path) {
				return fmt.Errorf("spec.attributes[%d].path: %q can read the data of a Secret; set the annotation %s: \"true\" on the profile if that is intended",
					i, a.Path, AllowSecretExtraction)
			}
		}
	}
	if x := p.Spec.Export; x != nil && x.Mode == "Resource" && !opted(p, AllowFullResourceExport) {
		return fmt.Errorf("spec.export.mode: exporting whole Secrets needs the annotation %s: \"true\" on the profile", AllowFullResourceExport)
	}
	return nil
}

// readsSecretData decides, conservatively, whether a path may read a
// Secret's data.
func readsSecretData(path string) bool {
	p := strings.TrimSpace(path)
	if rest, ok := strings.CutPrefix(p, "helm:release."); ok {
		// Only the user-supplied values carry secrets; the rest is metadata.
		return rest == "config" || strings.HasPrefix(rest, "config.") || strings.HasPrefix(rest, "config[")
	}
	for _, id := range identifiers.FindAllString(p, -1) {
		if strings.EqualFold(id, "data") || strings.EqualFold(id, "stringData") {
			return true
		}
	}
	if expr, ok := strings.CutPrefix(p, "cel:"); ok {
		uses := celObject.FindAllStringSubmatch(expr, -1)
		for _, m := range uses {
			field := m[1] + m[2]
			if !safeSecretFields[strings.ToLower(field)] {
				return true // the whole object, or a field that is not metadata
			}
		}
		return false
	}
	jp := strings.TrimSuffix(strings.TrimPrefix(p, "{"), "}")
	jp = strings.TrimPrefix(strings.TrimSpace(jp), "$")
	if strings.Contains(jp, "..") || strings.Contains(jp, "*") {
		return true
	}
	m := firstField.FindStringSubmatch(jp)
	return m == nil || !safeSecretFields[strings.ToLower(m[1]+m[2])]
}
