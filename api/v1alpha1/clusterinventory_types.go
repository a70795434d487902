package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KollectClusterInventorySpec rolls up the rows of cluster targets.
type KollectClusterInventorySpec struct {
	// profileRef is reserved and has no effect; when set it needs a name and
	// a namespace.
	// +optional
	// +kubebuilder:validation:XValidation:rule="has(self.__namespace__) && size(self.__namespace__) > 0",message="profileRef needs a namespace",fieldPath=".namespace"
	ProfileRef *NamespacedObjectReference `json:"profileRef,omitempty"`
	// targetRefs names KollectClusterTargets; empty selects every cluster
	// target (optionally filtered by targetSelector).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:XValidation:rule="!self.contains('/')",message="target names must not contain '/'"
	TargetRefs []string `json:"targetRefs,omitempty"`
	// targetSelector selects cluster targets by label when targetRefs is
	// empty.
	// +optional
	TargetSelector *metav1.LabelSelector `json:"targetSelector,omitempty"`
	// namespaceSelector selects the namespaces rolled up. Required and
	// non-empty.
	// +optional
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="must have at least one matchLabels entry or matchExpressions requirement"
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// namespaces is an explicit namespace list intersected with
	// namespaceSelector.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespaces []string `json:"namespaces,omitempty"`

	SinkRefs `json:",inline"`

	// sinkNamespace is the default namespace of sink references without one,
	// and of their Secrets.
	// +optional
	// +kubebuilder:default=kollect-system
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!self.contains('/')",message="must be a namespace name without '/'"
	SinkNamespace string `json:"sinkNamespace,omitempty"`
	// exportMinInterval is the default debounce between exports.
	// +optional
	// +kubebuilder:default="30s"
	ExportMinInterval Duration `json:"exportMinInterval,omitempty"`
	// dedupe: keepAll keeps every row; byResourceUID collapses rows of the
	// same object collected by several targets.
	// +optional
	// +kubebuilder:default=keepAll
	// +kubebuilder:validation:Enum=keepAll;byResourceUID
	Dedupe string `json:"dedupe,omitempty"`
	// suspend stops exports.
	// +optional
	// +kubebuilder:default=false
	Suspend bool `json:"suspend,omitempty"`
}

// NamespaceShardStatus describes one namespace shard of a rollup.
type NamespaceShardStatus struct {
	// namespace of the shard.
	// +required
	Namespace string `json:"namespace"`
	// itemCount is the number of rows in the shard.
	// +optional
	ItemCount int `json:"itemCount,omitempty"`
	// targetCount is the number of targets contributing to the shard.
	// +optional
	TargetCount int `json:"targetCount,omitempty"`
	// checksum is the fingerprint of the shard's rows.
	// +optional
	Checksum string `json:"checksum,omitempty"`
}

// KollectClusterInventoryStatus is the observed state of a
// KollectClusterInventory.
type KollectClusterInventoryStatus struct {
	// conditions: Ready, Synced, SinkReachable, ExportSucceeded, Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// itemCount is the number of rows in the rollup after dedupe.
	// +optional
	ItemCount int `json:"itemCount,omitempty"`
	// exportedCount is the smallest row count acknowledged by any binding in
	// its latest export.
	// +optional
	ExportedCount *int64 `json:"exportedCount,omitempty"`
	// targetCount is the number of cluster targets selected.
	// +optional
	TargetCount int `json:"targetCount,omitempty"`
	// namespaceShardCount is the number of namespace shards composed.
	// +optional
	NamespaceShardCount int `json:"namespaceShardCount,omitempty"`
	// namespaceShards describe each shard.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	NamespaceShards []NamespaceShardStatus `json:"namespaceShards,omitempty"`
	// lastExportTime is the latest lastExportTime of any binding.
	// +optional
	LastExportTime *metav1.Time `json:"lastExportTime,omitempty"`
	// sinkExports has one entry per binding.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=20
	SinkExports []InventorySinkExportStatus `json:"sinkExports,omitempty"`
}

// KollectClusterInventory rolls up rows collected by cluster targets across
// namespaces and exports them.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=kcinv
// +kubebuilder:validation:XValidation:rule="has(self.spec.namespaceSelector)",message="spec.namespaceSelector is required: a cluster inventory must select namespaces by label"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Synced",type=string,JSONPath=`.status.conditions[?(@.type=="Synced")].reason`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].reason`
// +kubebuilder:printcolumn:name="Items",type=integer,JSONPath=`.status.itemCount`
// +kubebuilder:printcolumn:name="Exported",type=integer,JSONPath=`.status.exportedCount`
// +kubebuilder:printcolumn:name="Last Export",type=date,JSONPath=`.status.lastExportTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KollectClusterInventory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired rollup.
	// +required
	Spec KollectClusterInventorySpec `json:"spec"`
	// status is the observed rollup.
	// +optional
	Status KollectClusterInventoryStatus `json:"status,omitempty"`
}

// KollectClusterInventoryList is a list of KollectClusterInventory.
// +kubebuilder:object:root=true
type KollectClusterInventoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KollectClusterInventory `json:"items"`
}
