package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KollectDatabaseSinkSpec describes a sink that keeps one row per item in a
// database.
// +kubebuilder:validation:XValidation:rule="self.type != 'postgres' || has(self.postgres)",message="spec.postgres is required when type is postgres",fieldPath=".postgres"
// +kubebuilder:validation:XValidation:rule="self.type != 'bigquery' || has(self.bigquery)",message="spec.bigquery is required when type is bigquery",fieldPath=".bigquery"
// +kubebuilder:validation:XValidation:rule="self.type != 'mongodb' || has(self.mongodb)",message="spec.mongodb is required when type is mongodb",fieldPath=".mongodb"
// +kubebuilder:validation:XValidation:rule="!has(self.postgres) || self.type == 'postgres'",message="spec.postgres is only valid with type postgres",fieldPath=".postgres"
// +kubebuilder:validation:XValidation:rule="!has(self.bigquery) || self.type == 'bigquery'",message="spec.bigquery is only valid with type bigquery",fieldPath=".bigquery"
// +kubebuilder:validation:XValidation:rule="!has(self.mongodb) || self.type == 'mongodb'",message="spec.mongodb is only valid with type mongodb",fieldPath=".mongodb"
// +kubebuilder:validation:XValidation:rule="!has(self.layout)",message="spec.layout is only valid on git and gitlab snapshot sinks",fieldPath=".layout"
// +kubebuilder:validation:XValidation:rule="!has(self.serialization) || !has(self.serialization.format) || self.serialization.format == 'json'",message="database sinks write json only",fieldPath=".serialization.format"
type KollectDatabaseSinkSpec struct {
	// type of the database: postgres, bigquery or mongodb.
	// +required
	// +kubebuilder:validation:Enum=postgres;bigquery;mongodb
	Type string `json:"type"`

	SinkCommonFields `json:",inline"`

	// postgres configures type postgres.
	// +optional
	Postgres *PostgresSpec `json:"postgres,omitempty"`
	// bigquery configures type bigquery.
	// +optional
	BigQuery *BigQuerySpec `json:"bigquery,omitempty"`
	// mongodb configures type mongodb.
	// +optional
	MongoDB *MongoSpec `json:"mongodb,omitempty"`
}

// SQLIdentifier is a table or schema name.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=63
type SQLIdentifier string

// PostgresSpec configures a PostgreSQL sink.
type PostgresSpec struct {
	// databaseRef names the Secret with the connection string under the first
	// non-empty key of dsn, url, connectionString or DATABASE_URL.
	// +required
	DatabaseRef SecretReference `json:"databaseRef"`
	// table that holds the rows.
	// +required
	Table SQLIdentifier `json:"table"`
	// schema of the table (default public).
	// +optional
	Schema SQLIdentifier `json:"schema,omitempty"`
}

// BigQuerySpec configures a BigQuery sink.
type BigQuerySpec struct {
	// project is the Google Cloud project.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.trim().size() > 0",message="must not be blank"
	Project string `json:"project"`
	// dataset must already exist.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.trim().size() > 0",message="must not be blank"
	Dataset string `json:"dataset"`
	// table that holds the rows; created when missing.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.trim().size() > 0",message="must not be blank"
	Table string `json:"table"`
	// location of query jobs, for example EU.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Location string `json:"location,omitempty"`
	// secretRef names a Secret with a service-account key under
	// credentials.json; absent means Application Default Credentials.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// MongoSpec configures a MongoDB sink.
type MongoSpec struct {
	// databaseRef names the Secret with the URI under the first non-empty key
	// of uri, url, connectionString or MONGODB_URI.
	// +required
	DatabaseRef SecretReference `json:"databaseRef"`
	// database name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Database string `json:"database"`
	// collection name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Collection string `json:"collection"`
}

// KollectDatabaseSink keeps one row per inventory item in Postgres, MongoDB
// or BigQuery.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kdb
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Verified",type=string,JSONPath=`.status.conditions[?(@.type=="ConnectionVerified")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KollectDatabaseSink struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the sink configuration.
	// +required
	Spec KollectDatabaseSinkSpec `json:"spec"`
	// status is the observed sink state.
	// +optional
	Status FamilySinkStatus `json:"status,omitempty"`
}

// KollectDatabaseSinkList is a list of KollectDatabaseSink.
// +kubebuilder:object:root=true
type KollectDatabaseSinkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KollectDatabaseSink `json:"items"`
}
