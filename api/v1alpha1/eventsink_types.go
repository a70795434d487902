package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KollectEventSinkSpec describes a sink that receives row changes as
// messages.
// +kubebuilder:validation:XValidation:rule="self.type != 'nats' || has(self.nats)",message="spec.nats is required when type is nats",fieldPath=".nats"
// +kubebuilder:validation:XValidation:rule="self.type != 'kafka' || has(self.kafka)",message="spec.kafka is required when type is kafka",fieldPath=".kafka"
// +kubebuilder:validation:XValidation:rule="!has(self.nats) || self.type == 'nats'",message="spec.nats is only valid with type nats",fieldPath=".nats"
// +kubebuilder:validation:XValidation:rule="!has(self.kafka) || self.type == 'kafka'",message="spec.kafka is only valid with type kafka",fieldPath=".kafka"
// +kubebuilder:validation:XValidation:rule="!has(self.layout)",message="spec.layout is only valid on git and gitlab snapshot sinks",fieldPath=".layout"
// +kubebuilder:validation:XValidation:rule="!has(self.serialization) || !has(self.serialization.format) || self.serialization.format == 'json'",message="event sinks write json only",fieldPath=".serialization.format"
// +kubebuilder:validation:XValidation:rule="self.type != 'nats' || !has(self.nats) || (has(self.nats.url) && size(self.nats.url) > 0) || (has(self.endpoint) && size(self.endpoint) > 0)",message="a nats sink needs spec.nats.url or spec.endpoint",fieldPath=".nats.url"
type KollectEventSinkSpec struct {
	// type of the broker: nats or kafka.
	// +required
	// +kubebuilder:validation:Enum=nats;kafka
	Type string `json:"type"`

	SinkCommonFields `json:",inline"`

	// messages is what a message carries. perRow (the default unless the
	// operator's --event-messages says otherwise): one message per row
	// change, keyed by the object, with upsert and delete. envelope:
	// upstream's format, one message per export (per part of it) carrying
	// the whole export envelope, keyed <cluster>/<namespace>, for
	// consumers written for upstream.
	// +optional
	// +kubebuilder:validation:Enum=perRow;envelope
	Messages string `json:"messages,omitempty"`

	// nats configures type nats.
	// +optional
	NATS *NatsSpec `json:"nats,omitempty"`
	// kafka configures type kafka.
	// +optional
	Kafka *KafkaSpec `json:"kafka,omitempty"`
}

// NatsSpec configures a NATS JetStream sink.
type NatsSpec struct {
	// url of the NATS server, for example nats://nats.example:4222; falls
	// back to spec.endpoint.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url,omitempty"`
	// subject messages are published to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Subject string `json:"subject"`
	// stream that captures the subject (default kollect_events; dots become
	// underscores).
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Stream string `json:"stream,omitempty"`
	// secretRef overrides spec.secretRef; keys token, or username and
	// password.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// KafkaSpec configures a Kafka sink.
type KafkaSpec struct {
	// brokers as host:port.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^[^\s/]+:[0-9]{1,5}$`
	Brokers []string `json:"brokers"`
	// topic records are written to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=249
	Topic string `json:"topic"`
	// secretRef overrides spec.secretRef; keys username and password (SASL
	// SCRAM-SHA-256) or token.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// KollectEventSink publishes inventory changes to Kafka or NATS JetStream.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kevt
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Verified",type=string,JSONPath=`.status.conditions[?(@.type=="ConnectionVerified")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KollectEventSink struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the sink configuration.
	// +required
	Spec KollectEventSinkSpec `json:"spec"`
	// status is the observed sink state.
	// +optional
	Status FamilySinkStatus `json:"status,omitempty"`
}

// KollectEventSinkList is a list of KollectEventSink.
// +kubebuilder:object:root=true
type KollectEventSinkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KollectEventSink `json:"items"`
}
