package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Duration is a Go duration string such as "30s", "1m30s" or "0s", between
// 0s and 24h.
// +kubebuilder:validation:MaxLength=32
// +kubebuilder:validation:Pattern=`^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('24h')",message="must be a duration between 0s and 24h, such as 30s or 5m"
type Duration string

// GroupVersionKind names a Kubernetes kind.
type GroupVersionKind struct {
	// group is the API group; empty for the core group (Pods, Secrets, ...).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group,omitempty"`
	// version is the API version, for example v1.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Version string `json:"version"`
	// kind is the kind in CamelCase, for example Deployment.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
}

// SecretReference points at a Secret.
type SecretReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// namespace of the Secret; defaults to the namespace of the object that
	// holds the reference.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// NamespacedObjectReference points from a cluster-scoped kind at a
// namespaced object such as a KollectProfile.
type NamespacedObjectReference struct {
	// name of the referenced object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!self.contains('/')",message="must be a plain name without '/'"
	Name string `json:"name"`
	// namespace of the referenced object. Required by cluster kinds: there is
	// no implicit default.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// TLSSpec configures how a sink verifies the server it talks to.
// +kubebuilder:validation:XValidation:rule="!(has(self.caBundle) && has(self.caSecretRef))",message="set either caBundle or caSecretRef, not both"
type TLSSpec struct {
	// insecureSkipVerify disables server certificate verification (and SSH
	// host-key checking for Git). The sink reports a TLSInsecure condition.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
	// caBundle is an inline PEM CA bundle (base64 in YAML).
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`
	// caSecretRef names a Secret holding a PEM bundle under the first
	// non-empty key of tls.crt, ca.crt or ca.pem.
	// +optional
	CASecretRef *SecretReference `json:"caSecretRef,omitempty"`
}

// CollectionFilterSpec narrows what a target collects. It is inlined into
// KollectTarget and KollectClusterTarget.
type CollectionFilterSpec struct {
	// includedNamespaces is a static allow-list of namespaces.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	IncludedNamespaces []string `json:"includedNamespaces,omitempty"`
	// excludedNamespaces is a static deny-list applied after the include logic.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	// namespaceExcludeSelector excludes namespaces whose labels match.
	// +optional
	NamespaceExcludeSelector *metav1.LabelSelector `json:"namespaceExcludeSelector,omitempty"`
	// resourceRules are GVK-scoped selection rules, OR-ed together. When empty
	// the target collects the profile's GVK filtered by labelSelector and names.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	ResourceRules []ResourceRule `json:"resourceRules,omitempty"`
}

// ResourceRule selects objects of one GVK.
type ResourceRule struct {
	// gvk is the kind this rule selects.
	// +required
	GVK GroupVersionKind `json:"gvk"`
	// namespaceSelector further restricts the rule by namespace labels.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// matchLabels selects objects by label (AND-ed with matchExpressions).
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// matchExpressions selects objects by label expressions.
	// +optional
	// +listType=atomic
	MatchExpressions []metav1.LabelSelectorRequirement `json:"matchExpressions,omitempty"`
	// matchPolicy is a CEL boolean expression with `object` bound to the
	// resource (no cel: prefix), for example `object.spec.replicas > 1`.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	MatchPolicy string `json:"matchPolicy,omitempty"`
}

// CollectionFilterStatus reports which namespaces a target resolved to.
// Each list names, sorted, at most the first 256 namespaces (status stays
// small in a cluster of thousands); its count says how many there are.
type CollectionFilterStatus struct {
	// matchedNamespaces are the namespaces matched by the target's intent,
	// before scope ceilings: the first 256, sorted.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	MatchedNamespaces []string `json:"matchedNamespaces,omitempty"`
	// matchedNamespaceCount is how many namespaces matched, listed or not.
	// +optional
	MatchedNamespaceCount int `json:"matchedNamespaceCount,omitempty"`
	// effectiveNamespaces are the namespaces collected after scope allow-lists
	// and every deny-list: the first 256, sorted.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	EffectiveNamespaces []string `json:"effectiveNamespaces,omitempty"`
	// effectiveNamespaceCount is how many namespaces are collected, listed
	// or not.
	// +optional
	EffectiveNamespaceCount int `json:"effectiveNamespaceCount,omitempty"`
	// activeResourceRules is the number of resourceRules in force (0 when the
	// target uses the profile GVK).
	// +optional
	ActiveResourceRules int `json:"activeResourceRules,omitempty"`
}

// ScopeCeilingSpec is the tenancy ceiling shared by KollectScope and
// KollectClusterScope.
type ScopeCeilingSpec struct {
	// allowedGVKs lists the kinds targets may collect; empty allows any kind.
	// Matching is case-insensitive.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	AllowedGVKs []GroupVersionKind `json:"allowedGVKs,omitempty"`
	// allowedNamespaces caps the namespaces targets may collect from; empty
	// means no cap.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	AllowedNamespaces []string `json:"allowedNamespaces,omitempty"`
	// deniedNamespaces is a hard deny-list that target intent cannot override.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	DeniedNamespaces []string `json:"deniedNamespaces,omitempty"`
	// minExportInterval is the floor for every export interval governed by
	// this scope; shorter intervals are raised to it at runtime.
	// +optional
	MinExportInterval Duration `json:"minExportInterval,omitempty"`
}
