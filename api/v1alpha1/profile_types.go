package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KollectProfileSpec says what to extract from objects of one kind.
// +kubebuilder:validation:XValidation:rule="!has(self.export) || !has(self.export.mode) || self.export.mode != 'Attributes' || (has(self.attributes) && size(self.attributes) > 0)",message="export.mode Attributes needs at least one attribute",fieldPath=".attributes"
// +kubebuilder:validation:XValidation:rule="!has(self.export) || !has(self.export.mode) || self.export.mode != 'Resource' || !has(self.attributes) || !self.attributes.exists(a, a.name == (has(self.export.as) ? self.export.as : 'resource'))",message="an attribute must not use the name given by export.as: the embedded object is stored under that key",fieldPath=".attributes"
type KollectProfileSpec struct {
	// targetGVK is the kind this profile reads.
	// +required
	TargetGVK GroupVersionKind `json:"targetGVK"`
	// attributes are the values kept for each object.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	Attributes []ProfileAttribute `json:"attributes,omitempty"`
	// export embeds the (pruned) object itself in each row.
	// +optional
	Export *ExportSpec `json:"export,omitempty"`
	// metrics derive Prometheus series from attributes.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Metrics []ProfileMetric `json:"metrics,omitempty"`
}

// ProfileAttribute is one value extracted from each object.
type ProfileAttribute struct {
	// name is the attribute's key in the row.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`
	// path locates the value: a JSONPath (`$.spec.replicas` or
	// `{.spec.replicas}`), a CEL expression with the cel: prefix
	// (`cel:size(object.spec.template.spec.containers)`), or a Helm release
	// field (`helm:release.chartVersion`).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('object.') && !self.startsWith('object[')",message="CEL expressions must use the cel: prefix, for example cel:object.metadata.name"
	Path string `json:"path"`
	// type documents the value's type (string, int, list, map, ...); values
	// are not coerced.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Type string `json:"type,omitempty"`
	// optional: a missing value or an evaluation error leaves the attribute
	// out instead of failing the object.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// ExportSpec embeds the object in each row.
type ExportSpec struct {
	// mode: Attributes keeps only the attributes; Resource also embeds the
	// object under the key named by `as`.
	// +optional
	// +kubebuilder:default=Attributes
	// +kubebuilder:validation:Enum=Attributes;Resource
	Mode string `json:"mode,omitempty"`
	// as is the attribute key of the embedded object.
	// +optional
	// +kubebuilder:default=resource
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	As string `json:"as,omitempty"`
	// include selects which parts of the object are embedded.
	// +optional
	// +kubebuilder:default=SpecAndStatus
	// +kubebuilder:validation:Enum=MetadataOnly;SpecOnly;StatusOnly;SpecAndStatus;All
	Include string `json:"include,omitempty"`
	// dedupeIdentity strips identity (uid, resourceVersion, ...) from the
	// embedded copy. Absent means true.
	// +optional
	DedupeIdentity *bool `json:"dedupeIdentity,omitempty"`
	// prune removes noise and secrets from the embedded copy.
	// +optional
	Prune *PruneSpec `json:"prune,omitempty"`
}

// PruneSpec removes parts of an embedded object.
type PruneSpec struct {
	// defaults applies the built-in noise removal (managedFields, ...). Absent
	// means true.
	// +optional
	Defaults *bool `json:"defaults,omitempty"`
	// jsonPointers are RFC 6901 pointers to remove, such as
	// /status/conditions.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:items:Pattern=`^(/([^~/]|~[01])*)+$`
	JSONPointers []string `json:"jsonPointers,omitempty"`
	// jsonPaths are simple dotted or bracket paths to remove; filters and
	// wildcards are ignored.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	JSONPaths []string `json:"jsonPaths,omitempty"`
	// scrubKeys are extra keys whose values are redacted, merged with the
	// operator's list.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=128
	ScrubKeys []string `json:"scrubKeys,omitempty"`
	// cel is reserved: accepted and not enforced.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	CEL []string `json:"cel,omitempty"`
}

// ProfileMetric derives a Prometheus series from an attribute.
type ProfileMetric struct {
	// name of the series.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`
	// path is the name of the attribute that gives the value.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Path string `json:"path"`
	// labels are attribute names used as series labels (at most 5).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=5
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	Labels []string `json:"labels,omitempty"`
}

// KollectProfileStatus is never written; it exists for compatibility.
type KollectProfileStatus struct {
	// conditions are not populated.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// KollectProfile says which attributes to keep from objects of one kind.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kprof
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.targetGVK.group`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.targetGVK.kind`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KollectProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired extraction.
	// +required
	Spec KollectProfileSpec `json:"spec"`
	// status is not written by the operator.
	// +optional
	Status KollectProfileStatus `json:"status,omitempty"`
}

// KollectProfileList is a list of KollectProfile.
// +kubebuilder:object:root=true
type KollectProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KollectProfile `json:"items"`
}
