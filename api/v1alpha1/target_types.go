package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KollectTargetSpec binds a profile to a selection of objects.
type KollectTargetSpec struct {
	// profileRef is the name of a KollectProfile in the target's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!self.contains('/')",message="must be the name of a KollectProfile in the same namespace, without '/'"
	ProfileRef string `json:"profileRef"`
	// namespaceSelector selects workload namespaces by label; absent selects
	// every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	CollectionFilterSpec `json:",inline"`

	// labelSelector filters objects by label (used when resourceRules is
	// empty).
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// names keeps only objects with these exact names (used when
	// resourceRules is empty).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	Names []string `json:"names,omitempty"`
	// suspend stops collection and drops the target's rows.
	// +optional
	// +kubebuilder:default=false
	Suspend bool `json:"suspend,omitempty"`
	// watchMode: All collects every selected namespace; OptIn only namespaces
	// (or objects) labelled or annotated kollect.dev/watch=enabled.
	// +optional
	// +kubebuilder:default=All
	// +kubebuilder:validation:Enum=All;OptIn
	WatchMode string `json:"watchMode,omitempty"`
}

// KollectTargetStatus is the observed state of a KollectTarget.
type KollectTargetStatus struct {
	// conditions: Ready, Synced, SinkReachable, Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// extractionFailures is the number of objects currently failing a
	// required attribute.
	// +optional
	ExtractionFailures int `json:"extractionFailures,omitempty"`
	// lastExtractionError is the latest extraction failure.
	// +optional
	LastExtractionError string `json:"lastExtractionError,omitempty"`
	// collectedCount is the number of rows the target holds now.
	// +optional
	CollectedCount *int64 `json:"collectedCount,omitempty"`
	// collectedCountUpdatedAt is when collectedCount last changed.
	// +optional
	CollectedCountUpdatedAt *metav1.Time `json:"collectedCountUpdatedAt,omitempty"`

	CollectionFilterStatus `json:",inline"`
}

// KollectTarget collects the objects a profile describes from selected
// namespaces.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ktgt
// +kubebuilder:printcolumn:name="Profile",type=string,JSONPath=`.spec.profileRef`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].reason`
// +kubebuilder:printcolumn:name="Collected",type=integer,JSONPath=`.status.collectedCount`
// +kubebuilder:printcolumn:name="Updated",type=date,JSONPath=`.status.collectedCountUpdatedAt`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KollectTarget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired selection.
	// +required
	Spec KollectTargetSpec `json:"spec"`
	// status is the observed collection.
	// +optional
	Status KollectTargetStatus `json:"status,omitempty"`
}

// KollectTargetList is a list of KollectTarget.
// +kubebuilder:object:root=true
type KollectTargetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KollectTarget `json:"items"`
}

// KollectClusterTargetSpec is the platform variant of KollectTargetSpec.
type KollectClusterTargetSpec struct {
	// profileRef names a KollectProfile and its namespace.
	// +required
	// +kubebuilder:validation:XValidation:rule="has(self.__namespace__) && size(self.__namespace__) > 0",message="a cluster target must name the profile's namespace",fieldPath=".namespace"
	ProfileRef NamespacedObjectReference `json:"profileRef"`
	// namespaceSelector selects workload namespaces by label. Required and
	// non-empty: a cluster target never collects every namespace by accident.
	// +optional
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="must have at least one matchLabels entry or matchExpressions requirement"
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	CollectionFilterSpec `json:",inline"`

	// suspend stops collection and drops the target's rows.
	// +optional
	// +kubebuilder:default=false
	Suspend bool `json:"suspend,omitempty"`
}

// KollectClusterTargetStatus is the observed state of a KollectClusterTarget.
type KollectClusterTargetStatus struct {
	// conditions: Ready, Synced, Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// collectedCount is the number of rows the target holds now (a Kollect
	// addition; upstream has no count for cluster targets).
	// +optional
	CollectedCount *int64 `json:"collectedCount,omitempty"`

	CollectionFilterStatus `json:",inline"`
}

// KollectClusterTarget collects from namespaces across the cluster for a
// platform team.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=kctgt
// +kubebuilder:validation:XValidation:rule="has(self.spec.namespaceSelector)",message="spec.namespaceSelector is required: a cluster target must select namespaces by label"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].reason`
// +kubebuilder:printcolumn:name="Collected",type=integer,JSONPath=`.status.collectedCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KollectClusterTarget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired selection.
	// +required
	Spec KollectClusterTargetSpec `json:"spec"`
	// status is the observed collection.
	// +optional
	Status KollectClusterTargetStatus `json:"status,omitempty"`
}

// KollectClusterTargetList is a list of KollectClusterTarget.
// +kubebuilder:object:root=true
type KollectClusterTargetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KollectClusterTarget `json:"items"`
}
