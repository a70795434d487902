package kafka

import (
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// FromSpec builds a Kafka sink configuration from an event sink, the data
// of its credentials Secret and a PEM CA bundle (nil when none). Unlike
// upstream, spec.tls is honoured; without it the connection is plaintext.
func FromSpec(spec *kollectv1alpha1.KollectEventSinkSpec, secret map[string][]byte, ca []byte) Config {
	cfg := Config{Cluster: spec.Cluster, CA: ca, Existing: spec.Provisioning != nil && spec.Provisioning.Mode == "existing"}
	if k := spec.Kafka; k != nil {
		cfg.Brokers, cfg.Topic = k.Brokers, k.Topic
	}
	cfg.Username, cfg.Password = string(secret["username"]), string(secret["password"])
	if t := secret["token"]; len(t) > 0 && cfg.Password == "" {
		cfg.Password = string(t)
	}
	if spec.TLS != nil {
		cfg.TLS, cfg.InsecureSkipVerify = true, spec.TLS.InsecureSkipVerify
	}
	return cfg
}

// CredentialsRef is kafka.secretRef, else spec.secretRef.
func CredentialsRef(spec *kollectv1alpha1.KollectEventSinkSpec) *kollectv1alpha1.SecretReference {
	if spec.Kafka != nil && spec.Kafka.SecretRef != nil {
		return spec.Kafka.SecretRef
	}
	return spec.SecretRef
}
