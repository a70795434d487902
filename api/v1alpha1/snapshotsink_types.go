package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KollectSnapshotSinkSpec describes a sink that stores whole snapshots.
// +kubebuilder:validation:XValidation:rule="has(self.type) || has(self.git)",message="spec.type is required (git, gitlab, s3 or gcs); it may be omitted only when spec.git is set",fieldPath=".type"
// +kubebuilder:validation:XValidation:rule="!has(self.git) || !has(self.type) || self.type == 'git'",message="spec.git is only valid with type git",fieldPath=".git"
// +kubebuilder:validation:XValidation:rule="!has(self.gitlab) || (has(self.type) && self.type == 'gitlab')",message="spec.gitlab is only valid with type gitlab",fieldPath=".gitlab"
// +kubebuilder:validation:XValidation:rule="!has(self.objectStore) || (has(self.type) && (self.type == 's3' || self.type == 'gcs' || self.type == 'azureblob'))",message="spec.objectStore is only valid with type s3, gcs or azureblob",fieldPath=".objectStore"
// +kubebuilder:validation:XValidation:rule="!has(self.http)",message="spec.http is reserved and not valid for any sink type",fieldPath=".http"
// +kubebuilder:validation:XValidation:rule="!has(self.layout) || !has(self.type) || self.type == 'git' || self.type == 'gitlab' || ((!has(self.layout.content) || self.layout.content == 'item') && !has(self.layout.index) && !has(self.layout.filename))",message="spec.layout: object stores read only mode (document, split, perResource) and pathTemplate; content (other than its default, item), index and filename are for git and gitlab",fieldPath=".layout"
// +kubebuilder:validation:XValidation:rule="!has(self.serialization) || !has(self.serialization.format) || ((!has(self.type) || self.type == 'git' || self.type == 'gitlab') ? self.serialization.format in ['json', 'yaml', 'ndjson'] : self.serialization.format in ['json', 'parquet', 'csv', 'ndjson'])",message="serialization.format does not fit the sink type: git and gitlab write json, yaml or ndjson; object stores (s3, gcs, azureblob) write json, ndjson, csv or parquet",fieldPath=".serialization.format"
type KollectSnapshotSinkSpec struct {
	// type of the backend: git, gitlab, s3, gcs or azureblob (a Kollect
	// addition). May be omitted when a git block is present (then git is
	// assumed).
	// +optional
	// +kubebuilder:validation:Enum=git;gitlab;s3;gcs;azureblob
	Type string `json:"type,omitempty"`

	SinkCommonFields `json:",inline"`

	// git configures type git; absent means all defaults.
	// +optional
	Git *GitSpec `json:"git,omitempty"`
	// gitlab configures type gitlab.
	// +optional
	GitLab *GitLabSpec `json:"gitlab,omitempty"`
	// objectStore configures type s3 and gcs.
	// +optional
	ObjectStore *ObjectStoreSpec `json:"objectStore,omitempty"`
	// http is reserved and rejected.
	// +optional
	HTTP *HTTPSinkSpec `json:"http,omitempty"`
}

// GitSpec configures a Git snapshot sink.
type GitSpec struct {
	// endpoint is an alias of spec.endpoint, accepted for upstream samples
	// that nest it here; spec.endpoint wins when both are set.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Endpoint string `json:"endpoint,omitempty"`
	// pathTemplate is an alias of spec.pathTemplate, accepted for upstream
	// samples that nest it here; spec.pathTemplate wins when both are set.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(s, s == '..')",message="must be a relative path without '..' segments"
	PathTemplate string `json:"pathTemplate,omitempty"`
	// branch to commit to; defaults to the endpoint's #branch= fragment,
	// else main.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/-]*$`
	// +kubebuilder:validation:XValidation:rule="!self.contains('..') && !self.endsWith('.') && !self.endsWith('.lock') && !self.startsWith('refs/') && !self.contains('@{')",message="must be a plain branch name such as main (no '..', no refs/ prefix, not ending in '.' or '.lock')"
	Branch string `json:"branch,omitempty"`
	// pushPolicy: Commit fast-forwards (default); ForcePush overwrites the
	// remote branch.
	// +optional
	// +kubebuilder:validation:Enum=Commit;ForcePush
	PushPolicy string `json:"pushPolicy,omitempty"`
	// auth selects the credential type.
	// +optional
	Auth *GitAuthSpec `json:"auth,omitempty"`
	// commitMessage is the subject template; placeholders: {namespace}
	// {name} {cluster} {generation} {exportGeneration} {itemCount}
	// {checksum} {checksumShort} {exportedAt} {sink} {path}.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	CommitMessage string `json:"commitMessage,omitempty"`
	// commitBody is the body template (same placeholders).
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	CommitBody string `json:"commitBody,omitempty"`
	// commitTrailers are trailer lines (same placeholders).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=1024
	CommitTrailers []string `json:"commitTrailers,omitempty"`
	// author of the commits (default kollect <kollect@kollect.dev>).
	// +optional
	Author *GitAuthor `json:"author,omitempty"`
	// cloneDepth of the working mirror (default 1).
	// +optional
	// +kubebuilder:validation:Minimum=1
	CloneDepth int32 `json:"cloneDepth,omitempty"`
	// prune removes files the sink wrote earlier and no longer writes (tree
	// layouts always prune).
	// +optional
	Prune *bool `json:"prune,omitempty"`
	// engine: go-git (default) or cli.
	// +optional
	// +kubebuilder:validation:Enum=go-git;cli
	Engine string `json:"engine,omitempty"`
	// forceBasicAuth sends an explicit Authorization: Basic header.
	// +optional
	ForceBasicAuth bool `json:"forceBasicAuth,omitempty"`
}

// GitAuthSpec selects Git credentials.
type GitAuthSpec struct {
	// type: token (HTTPS token or basic auth) or ssh; derived from the
	// endpoint scheme when absent.
	// +optional
	// +kubebuilder:validation:Enum=token;ssh
	Type string `json:"type,omitempty"`
	// secretRef overrides spec.secretRef for Git credentials.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// GitAuthor is a commit author.
type GitAuthor struct {
	// name of the author.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name,omitempty"`
	// email of the author.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Email string `json:"email,omitempty"`
}

// GitLabSpec configures a GitLab snapshot sink.
type GitLabSpec struct {
	// mergeRequest configures merge-request mode.
	// +optional
	MergeRequest *GitLabMergeRequestSpec `json:"mergeRequest,omitempty"`
}

// GitLabMergeRequestSpec configures how exports reach GitLab.
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'merge_request' || (has(self.targetBranch) && size(self.targetBranch) > 0)",message="targetBranch is required when mode is merge_request",fieldPath=".targetBranch"
type GitLabMergeRequestSpec struct {
	// mode: direct commits to the branch; merge_request opens a merge
	// request.
	// +optional
	// +kubebuilder:validation:Enum=direct;merge_request
	Mode string `json:"mode,omitempty"`
	// targetBranch of merge requests.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	TargetBranch string `json:"targetBranch,omitempty"`
	// branchPrefix of source branches (default kollect).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	BranchPrefix string `json:"branchPrefix,omitempty"`
	// titleTemplate of merge requests; placeholders {namespace} {name}.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	TitleTemplate string `json:"titleTemplate,omitempty"`
	// autoMerge is accepted and not implemented.
	// +optional
	AutoMerge bool `json:"autoMerge,omitempty"`
}

// ObjectStoreSpec configures an S3 or GCS snapshot sink.
type ObjectStoreSpec struct {
	// format of the objects: json or parquet.
	// +optional
	// +kubebuilder:validation:Enum=json;parquet
	Format string `json:"format,omitempty"`
	// hotAttributes are attribute keys promoted to typed Parquet columns
	// (default image, version).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=128
	HotAttributes []string `json:"hotAttributes,omitempty"`
}

// HTTPSinkSpec is reserved.
type HTTPSinkSpec struct {
	// method is reserved.
	// +optional
	Method string `json:"method,omitempty"`
}

// KollectSnapshotSink stores whole inventory snapshots in Git, GitLab, S3 or
// GCS.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ksnap
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.endpoint`,priority=1
// +kubebuilder:printcolumn:name="Verified",type=string,JSONPath=`.status.conditions[?(@.type=="ConnectionVerified")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KollectSnapshotSink struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the sink configuration.
	// +required
	Spec KollectSnapshotSinkSpec `json:"spec"`
	// status is the observed sink state.
	// +optional
	Status FamilySinkStatus `json:"status,omitempty"`
}

// KollectSnapshotSinkList is a list of KollectSnapshotSink.
// +kubebuilder:object:root=true
type KollectSnapshotSinkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KollectSnapshotSink `json:"items"`
}
