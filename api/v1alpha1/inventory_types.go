package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SinkRefs are the bindings of an inventory, one list per sink family; an
// inventory binds at most 20 sinks in all.
type SinkRefs struct {
	// snapshotSinkRefs bind KollectSnapshotSinks (Git, GitLab, S3, GCS).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	SnapshotSinkRefs []InventorySinkRef `json:"snapshotSinkRefs,omitempty"`
	// databaseSinkRefs bind KollectDatabaseSinks (Postgres, MongoDB, BigQuery).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	DatabaseSinkRefs []InventorySinkRef `json:"databaseSinkRefs,omitempty"`
	// eventSinkRefs bind KollectEventSinks (Kafka, NATS JetStream).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	EventSinkRefs []InventorySinkRef `json:"eventSinkRefs,omitempty"`
}

// KollectInventorySpec aggregates the rows of every target in the
// inventory's namespace and exports them to sinks in the same namespace.
type KollectInventorySpec struct {
	SinkRefs `json:",inline"`

	// exportMinInterval is the default debounce between exports of unchanged
	// bindings.
	// +optional
	// +kubebuilder:default="30s"
	ExportMinInterval Duration `json:"exportMinInterval,omitempty"`
	// maxExportBytes is the inventory-wide export ceiling; it must not exceed
	// the operator's --max-export-bytes.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxExportBytes *int64 `json:"maxExportBytes,omitempty"`
	// suspend stops exports.
	// +optional
	// +kubebuilder:default=false
	Suspend bool `json:"suspend,omitempty"`
	// httpEndpoint is accepted for compatibility and not read: the HTTP API is
	// an operator-level switch.
	// +optional
	HTTPEndpoint *HTTPEndpointSpec `json:"httpEndpoint,omitempty"`
}

// HTTPEndpointSpec is accepted for compatibility and not read.
type HTTPEndpointSpec struct {
	// enabled is not read.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// port is not read.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
}

// InventorySinkExportStatus is the export state of one binding.
type InventorySinkExportStatus struct {
	// name is the binding key <family>/<sinkName>, for example
	// database/warehouse.
	// +required
	Name string `json:"name"`
	// namespace is the resolved sink namespace (cluster inventories only).
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// lastExportTime is the last export the sink acknowledged.
	// +optional
	LastExportTime *metav1.Time `json:"lastExportTime,omitempty"`
	// lastChecksum is the fingerprint of that export.
	// +optional
	LastChecksum string `json:"lastChecksum,omitempty"`
	// exportedCount is the number of rows the sink acknowledged in that
	// export. An export that left the rows of targets still listing as the
	// sink holds them (after a restart) keeps the last complete export's
	// count and lastChecksum.
	// +optional
	ExportedCount *int64 `json:"exportedCount,omitempty"`
	// lastWrittenCount is what that export wrote: rows inserted, updated or
	// deleted (database sinks), messages published (event sinks), files
	// changed (snapshot sinks). 0 when the sink already held the content.
	// +optional
	LastWrittenCount *int64 `json:"lastWrittenCount,omitempty"`
	// lastExportBytes is the number of bytes that export sent.
	// +optional
	LastExportBytes *int64 `json:"lastExportBytes,omitempty"`
	// lastExportParts is how many parts a snapshot sink's last export was
	// split into by the binding's maxExportBytes (1: not split). A Kollect
	// addition.
	// +optional
	LastExportParts int32 `json:"lastExportParts,omitempty"`
	// rejectedCount is the number of rows the sink refused and set aside in
	// the last acknowledged export (for example a NUL character PostgreSQL
	// cannot store, or a message over the broker's size limit); the rest
	// of the export went through. A rejected row is tried again when it
	// changes.
	// +optional
	RejectedCount int32 `json:"rejectedCount,omitempty"`
	// rejectedKeys names the first rejected rows (targetNamespace/
	// targetName/uid).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	RejectedKeys []string `json:"rejectedKeys,omitempty"`
	// rejectedReason says why the sink refused the first rejected row.
	// +optional
	RejectedReason string `json:"rejectedReason,omitempty"`
	// consecutiveFailures counts failed exports since the last acknowledged
	// one; the circuit opens after three.
	// +optional
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`
	// circuit is the state of the binding's circuit breaker: Closed, Open or
	// HalfOpen.
	// +optional
	Circuit string `json:"circuit,omitempty"`
	// conditions: a single Synced condition (Exported, Debounced,
	// ExportFailed).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// KollectInventoryStatus is the observed state of a KollectInventory.
type KollectInventoryStatus struct {
	// conditions: Ready, Synced, SinkReachable, Degraded, ExportShardWarning.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// itemCount is the number of rows in the inventory now.
	// +optional
	ItemCount int `json:"itemCount,omitempty"`
	// exportedCount is the smallest row count acknowledged by any binding in
	// its latest export.
	// +optional
	ExportedCount *int64 `json:"exportedCount,omitempty"`
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

// KollectInventory exports the rows of its namespace's targets to sinks.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kinv
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Synced",type=string,JSONPath=`.status.conditions[?(@.type=="Synced")].reason`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].reason`
// +kubebuilder:printcolumn:name="Items",type=integer,JSONPath=`.status.itemCount`
// +kubebuilder:printcolumn:name="Exported",type=integer,JSONPath=`.status.exportedCount`
// +kubebuilder:printcolumn:name="Last Export",type=date,JSONPath=`.status.lastExportTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KollectInventory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired export.
	// +required
	Spec KollectInventorySpec `json:"spec"`
	// status is the observed export.
	// +optional
	Status KollectInventoryStatus `json:"status,omitempty"`
}

// KollectInventoryList is a list of KollectInventory.
// +kubebuilder:object:root=true
type KollectInventoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KollectInventory `json:"items"`
}
