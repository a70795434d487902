package nats

import (
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// FromSpec builds a NATS sink configuration from an event sink, the data of
// its credentials Secret and a PEM CA bundle (nil when none).
func FromSpec(spec *kollectv1alpha1.KollectEventSinkSpec, secret map[string][]byte, ca []byte) Config {
	cfg := Config{URL: spec.Endpoint, Cluster: spec.Cluster, CA: ca,
		Existing: spec.Provisioning != nil && spec.Provisioning.Mode == "existing"}
	if n := spec.NATS; n != nil {
		cfg.Subject, cfg.Stream = n.Subject, n.Stream
		if n.URL != "" {
			cfg.URL = n.URL
		}
	}
	cfg.Token = string(secret["token"])
	cfg.Username, cfg.Password = string(secret["username"]), string(secret["password"])
	cfg.InsecureSkipVerify = spec.TLS != nil && spec.TLS.InsecureSkipVerify
	return cfg
}

// CredentialsRef is nats.secretRef, else spec.secretRef.
func CredentialsRef(spec *kollectv1alpha1.KollectEventSinkSpec) *kollectv1alpha1.SecretReference {
	if spec.NATS != nil && spec.NATS.SecretRef != nil {
		return spec.NATS.SecretRef
	}
	return spec.SecretRef
}
