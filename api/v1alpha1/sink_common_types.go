package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SinkCommonFields are the settings every sink family shares.
type SinkCommonFields struct {
	// endpoint is the backend destination: a Git remote URL, a bucket URI,
	// and so on (see the sink type's documentation).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Endpoint string `json:"endpoint,omitempty"`
	// secretRef names the Secret holding the sink's credentials. Kollect
	// resolves it; the sink never reads Secrets itself.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
	// tls configures server verification.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`
	// connectionTest runs a connectivity probe on every reconcile of the sink.
	// Absent means enabled.
	// +optional
	ConnectionTest *bool `json:"connectionTest,omitempty"`
	// cluster is the fleet partition label written into every row, path and
	// message, so that several clusters can share one backend.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Cluster string `json:"cluster,omitempty"`
	// pathTemplate is the snapshot document or object path, for example
	// `clusters/{cluster}/{namespace}/{name}.yaml`. It must contain
	// {namespace} and {name}; other placeholders: {cluster} {generation}
	// {extension}.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="must be a relative path (no leading '/')"
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(s, s == '..')",message="must not contain '..' segments"
	// +kubebuilder:validation:XValidation:rule="self.contains('{namespace}') && self.contains('{name}')",message="must contain the {namespace} and {name} placeholders"
	PathTemplate string `json:"pathTemplate,omitempty"`
	// exportMinInterval is the default debounce for inventory bindings that do
	// not set their own.
	// +optional
	ExportMinInterval Duration `json:"exportMinInterval,omitempty"`
	// serialization selects the export format.
	// +optional
	Serialization *SerializationSpec `json:"serialization,omitempty"`
	// layout controls the file tree a Git or GitLab sink writes. Only valid
	// for type git and gitlab.
	// +optional
	Layout *LayoutSpec `json:"layout,omitempty"`
	// provisioning controls whether Kollect creates the backend's tables,
	// streams or topics.
	// +optional
	Provisioning *ProvisioningSpec `json:"provisioning,omitempty"`
	// options are non-secret pass-through settings. Keys that look like
	// credentials (password, token, secret, ...) are rejected: put those in
	// the Secret named by secretRef.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !['password','passwd','secret','token','apikey','api_key','accesskey','access_key','secretkey','secret_key','privatekey','private_key','credential'].exists(w, k.lowerAscii().contains(w)))",message="option keys must not look like credentials (password, token, secret, ...); put credentials in the Secret named by secretRef"
	Options map[string]string `json:"options,omitempty"`
}

// SerializationSpec selects how rows are encoded.
type SerializationSpec struct {
	// format of the export. git/gitlab: json, yaml, ndjson; object stores
	// (s3, gcs): json (the export envelope, default), ndjson, csv, parquet;
	// database and event sinks: json.
	// +optional
	// +kubebuilder:validation:Enum=json;yaml;parquet;csv;ndjson
	Format string `json:"format,omitempty"`
	// compression of what object stores write: gzip and zstd compress the
	// object (Content-Encoding, .gz/.zst), and Parquet uses gzip, zstd or
	// snappy for its pages; other sink types ignore it.
	// +optional
	// +kubebuilder:validation:Enum=none;gzip;snappy;zstd
	Compression string `json:"compression,omitempty"`
}

// ProvisioningSpec controls backend provisioning.
type ProvisioningSpec struct {
	// mode: ensure creates what is missing (default); existing never changes
	// the backend's schema.
	// +optional
	// +kubebuilder:validation:Enum=ensure;existing
	Mode string `json:"mode,omitempty"`
	// naming is reserved and has no effect.
	// +optional
	Naming *ProvisioningNaming `json:"naming,omitempty"`
}

// ProvisioningNaming is reserved.
type ProvisioningNaming struct {
	// template is reserved; it follows the pathTemplate rules.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Template string `json:"template,omitempty"`
}

// LayoutSpec shapes the tree a Git or GitLab sink writes.
type LayoutSpec struct {
	// mode: document writes one document per inventory, perResource one file
	// per row, split both a file per row and an index.
	// +optional
	// +kubebuilder:default=document
	// +kubebuilder:validation:Enum=document;perResource;split
	Mode string `json:"mode,omitempty"`
	// content of each per-row file: the whole row (item), its attributes
	// only, or the exported manifest.
	// +optional
	// +kubebuilder:default=item
	// +kubebuilder:validation:Enum=item;attributes;manifest
	Content string `json:"content,omitempty"`
	// pathTemplate is the per-row file path, for example
	// `clusters/{cluster}/{sourceNamespace}/{kind}/{sourceName}{extension}`. It
	// must contain {sourceName}, {name} or {uid}.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(s, s == '..')",message="must not contain '..' segments"
	// +kubebuilder:validation:XValidation:rule="self.contains('{sourceName}') || self.contains('{name}') || self.contains('{uid}')",message="must contain {sourceName}, {name} or {uid} so that rows get distinct files"
	PathTemplate string `json:"pathTemplate,omitempty"`
	// index controls the index document.
	// +optional
	Index *LayoutIndex `json:"index,omitempty"`
	// filename controls how path segments are built.
	// +optional
	Filename *LayoutFilename `json:"filename,omitempty"`
}

// LayoutIndex controls the index document of a tree layout.
type LayoutIndex struct {
	// enabled writes the index; absent means on in split mode only.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// pathTemplate of the index; same rules as spec.pathTemplate.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.contains('{namespace}') && self.contains('{name}')",message="must contain the {namespace} and {name} placeholders"
	PathTemplate string `json:"pathTemplate,omitempty"`
}

// LayoutFilename controls path segments of a tree layout.
type LayoutFilename struct {
	// groupInPath: auto omits the {group} segment for core kinds.
	// +optional
	// +kubebuilder:validation:Enum=auto;always;never
	GroupInPath string `json:"groupInPath,omitempty"`
	// lowercaseKind writes kinds in lower case (absent means true).
	// +optional
	LowercaseKind *bool `json:"lowercaseKind,omitempty"`
	// maxSegmentLength truncates long segments (absent means 63).
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxSegmentLength int32 `json:"maxSegmentLength,omitempty"`
}

// FamilySinkStatus is the observed state of every sink kind.
type FamilySinkStatus struct {
	// conditions: ConnectionVerified, Degraded, TLSInsecure.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// preview is rendered while the annotation kollect.dev/preview: "true"
	// is on the sink.
	// +optional
	Preview *SinkPreviewStatus `json:"preview,omitempty"`
}

// SinkPreviewStatus shows what the sink would write, rendered from a
// synthetic sample inventory.
type SinkPreviewStatus struct {
	// renderedAt is when the preview was rendered.
	// +optional
	RenderedAt *metav1.Time `json:"renderedAt,omitempty"`
	// inputSampleSource names the sample used (synthetic).
	// +optional
	InputSampleSource string `json:"inputSampleSource,omitempty"`
	// provisioningMode is the effective provisioning mode.
	// +optional
	ProvisioningMode string `json:"provisioningMode,omitempty"`
	// serializationFormat is the effective format.
	// +optional
	SerializationFormat string `json:"serializationFormat,omitempty"`
	// objectPath is the rendered document or object path.
	// +optional
	ObjectPath string `json:"objectPath,omitempty"`
	// git previews the commit (git and gitlab only).
	// +optional
	Git *GitPreview `json:"git,omitempty"`
	// layout previews the tree (git and gitlab only).
	// +optional
	Layout *LayoutPreview `json:"layout,omitempty"`
	// postgres previews the table.
	// +optional
	Postgres *PostgresPreview `json:"postgres,omitempty"`
	// mongodb previews the index.
	// +optional
	MongoDB *MongoDBPreview `json:"mongodb,omitempty"`
	// kafka previews the topic.
	// +optional
	Kafka *KafkaPreview `json:"kafka,omitempty"`
	// warnings are non-blocking implications of the configuration.
	// +optional
	// +listType=atomic
	Warnings []string `json:"warnings,omitempty"`
}

// GitPreview is a sample commit.
type GitPreview struct {
	// sampleCommitSubject is the rendered commit subject.
	// +optional
	SampleCommitSubject string `json:"sampleCommitSubject,omitempty"`
	// sampleCommitBody is the rendered commit body.
	// +optional
	SampleCommitBody string `json:"sampleCommitBody,omitempty"`
}

// LayoutPreview is a sample tree.
type LayoutPreview struct {
	// mode is the effective layout mode.
	// +optional
	Mode string `json:"mode,omitempty"`
	// content is the effective per-file content.
	// +optional
	Content string `json:"content,omitempty"`
	// prune tells whether stale files are removed.
	// +optional
	Prune bool `json:"prune,omitempty"`
	// samplePaths are up to three sample file paths.
	// +optional
	// +listType=atomic
	SamplePaths []string `json:"samplePaths,omitempty"`
}

// PostgresPreview is the expected table.
type PostgresPreview struct {
	// expectedDDL is the CREATE TABLE statement.
	// +optional
	ExpectedDDL string `json:"expectedDDL,omitempty"`
}

// MongoDBPreview is the expected index.
type MongoDBPreview struct {
	// expectedIndexKeys are the keys of the unique index.
	// +optional
	// +listType=atomic
	ExpectedIndexKeys []string `json:"expectedIndexKeys,omitempty"`
}

// KafkaPreview is the expected topic.
type KafkaPreview struct {
	// topic is the topic written to.
	// +optional
	Topic string `json:"topic,omitempty"`
}
