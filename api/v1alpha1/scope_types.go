package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ScopeSinkAllowList limits which sinks inventories governed by a scope may
// bind. An empty list places no restriction on its family.
type ScopeSinkAllowList struct {
	// snapshotSinkRefs are the allowed KollectSnapshotSink names.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	SnapshotSinkRefs []string `json:"snapshotSinkRefs,omitempty"`
	// databaseSinkRefs are the allowed KollectDatabaseSink names.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	DatabaseSinkRefs []string `json:"databaseSinkRefs,omitempty"`
	// eventSinkRefs are the allowed KollectEventSink names.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	EventSinkRefs []string `json:"eventSinkRefs,omitempty"`
	// sinkRefs is a deprecated alias accepted for upstream manifests: allowed
	// sink names in any family. Upstream silently ignored this field; Kollect
	// enforces it.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	SinkRefs []string `json:"sinkRefs,omitempty"`
}

// KollectScopeSpec is the tenancy ceiling of one namespace.
type KollectScopeSpec struct {
	ScopeCeilingSpec   `json:",inline"`
	ScopeSinkAllowList `json:",inline"`

	// allowedSecretNamespaces are the namespaces, besides its own, whose
	// Secrets the sinks of this namespace may read (secretRef, databaseRef,
	// tls.caSecretRef, git.auth.secretRef). Without it a sink reads Secrets
	// of its own namespace only. A Kollect extension: upstream let any sink
	// read any Secret the operator can read.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	AllowedSecretNamespaces []string `json:"allowedSecretNamespaces,omitempty"`
	// allowAmbientCredentials lets the cloud sinks of this namespace (s3,
	// gcs, bigquery) that hold no key in their Secret use the operator's
	// own identity (IRSA, Workload Identity, the node's role). It takes
	// effect only when the operator allows ambient credentials too
	// (--allow-ambient-credentials) and every KollectScope of the namespace
	// sets it. A Kollect extension: upstream let every sink use it.
	// +optional
	AllowAmbientCredentials bool `json:"allowAmbientCredentials,omitempty"`
}

// KollectScope caps what targets and inventories in its namespace may do.
// When several exist in a namespace, every one of them must allow what is
// asked: a scope can only narrow.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=kscope
// +kubebuilder:printcolumn:name="Floor",type=string,JSONPath=`.spec.minExportInterval`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KollectScope struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// spec is the ceiling.
	// +required
	Spec KollectScopeSpec `json:"spec"`
}

// KollectScopeList is a list of KollectScope.
// +kubebuilder:object:root=true
type KollectScopeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KollectScope `json:"items"`
}

// KollectClusterScopeSpec is the tenancy ceiling of cluster kinds.
type KollectClusterScopeSpec struct {
	ScopeCeilingSpec   `json:",inline"`
	ScopeSinkAllowList `json:",inline"`

	// allowedStaticRefNamespaces are the namespaces cluster kinds may
	// reference for profiles and sinks; empty allows any.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	AllowedStaticRefNamespaces []string `json:"allowedStaticRefNamespaces,omitempty"`
}

// KollectClusterScope caps what cluster targets and cluster inventories may
// do, and the kinds and namespaces of every namespace's targets. When
// several exist, every one of them must allow what is asked.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=kcscope
// +kubebuilder:printcolumn:name="Floor",type=string,JSONPath=`.spec.minExportInterval`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KollectClusterScope struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// spec is the ceiling.
	// +required
	Spec KollectClusterScopeSpec `json:"spec"`
}

// KollectClusterScopeList is a list of KollectClusterScope.
// +kubebuilder:object:root=true
type KollectClusterScopeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KollectClusterScope `json:"items"`
}
