// Package v1alpha1 holds the Kollect API types of the kollect.dev/v1alpha1
// group: what to collect (KollectProfile, KollectTarget, KollectClusterTarget),
// how to aggregate and export it (KollectInventory, KollectClusterInventory),
// where to export it (KollectSnapshotSink, KollectDatabaseSink,
// KollectEventSink), tenancy ceilings (KollectScope, KollectClusterScope) and
// on-demand sink probes (KollectConnectionTest).
//
// The package holds types and kubebuilder markers only. The CRD manifests in
// deploy/crds and zz_generated.deepcopy.go are generated from it by
// `make generate`. It must not import anything of Kollect's own.
//
// +kubebuilder:object:generate=true
// +groupName=kollect.dev
package v1alpha1
