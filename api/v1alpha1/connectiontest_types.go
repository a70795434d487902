package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConnectionTestSinkRef names exactly one sink in the test's namespace.
// +kubebuilder:validation:XValidation:rule="(has(self.snapshotSinkRef) ? 1 : 0) + (has(self.databaseSinkRef) ? 1 : 0) + (has(self.eventSinkRef) ? 1 : 0) == 1",message="set exactly one of snapshotSinkRef, databaseSinkRef and eventSinkRef"
type ConnectionTestSinkRef struct {
	// snapshotSinkRef names a KollectSnapshotSink.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!self.contains('/')",message="must be a sink name in the same namespace, without '/'"
	SnapshotSinkRef string `json:"snapshotSinkRef,omitempty"`
	// databaseSinkRef names a KollectDatabaseSink.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!self.contains('/')",message="must be a sink name in the same namespace, without '/'"
	DatabaseSinkRef string `json:"databaseSinkRef,omitempty"`
	// eventSinkRef names a KollectEventSink.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!self.contains('/')",message="must be a sink name in the same namespace, without '/'"
	EventSinkRef string `json:"eventSinkRef,omitempty"`
}

// KollectConnectionTestSpec requests one probe of one sink.
type KollectConnectionTestSpec struct {
	// sinkRef is the sink to probe.
	// +required
	SinkRef ConnectionTestSinkRef `json:"sinkRef"`
	// profileRef is reserved.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!self.contains('/')",message="must be a name without '/'"
	ProfileRef string `json:"profileRef,omitempty"`
	// ownerSink makes the sink the test's controller owner, so the test is
	// deleted with the sink. Absent means true.
	// +optional
	OwnerSink *bool `json:"ownerSink,omitempty"`
	// ttlSecondsAfterFinished deletes the test this long after it completes.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// KollectConnectionTestStatus is the result of the probe.
type KollectConnectionTestStatus struct {
	// conditions: ConnectionVerified, Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// latencyMs is the probe's round-trip time.
	// +optional
	LatencyMs int64 `json:"latencyMs,omitempty"`
	// completed is true once the probe ran.
	// +optional
	Completed bool `json:"completed,omitempty"`
	// completedAt is when the probe ran.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
}

// KollectConnectionTest probes one sink once and records the result.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kconntest
// +kubebuilder:printcolumn:name="Sink",type=string,JSONPath=`.spec.sinkRef`
// +kubebuilder:printcolumn:name="Verified",type=string,JSONPath=`.status.conditions[?(@.type=="ConnectionVerified")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Latency",type=integer,JSONPath=`.status.latencyMs`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KollectConnectionTest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// spec names the sink.
	// +required
	Spec KollectConnectionTestSpec `json:"spec"`
	// status is the probe result.
	// +optional
	Status KollectConnectionTestStatus `json:"status,omitempty"`
}

// KollectConnectionTestList is a list of KollectConnectionTest.
// +kubebuilder:object:root=true
type KollectConnectionTestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KollectConnectionTest `json:"items"`
}
