package mongodb

import (
	"fmt"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// uriKeys are the Secret keys a URI is read from, first non-empty wins.
var uriKeys = []string{"uri", "url", "connectionString", "MONGODB_URI"}

// FromSpec builds a MongoDB sink configuration from a database sink, the
// data of its URI Secret and a PEM CA bundle (nil when none).
func FromSpec(spec *kollectv1alpha1.KollectDatabaseSinkSpec, secret map[string][]byte, ca []byte) (Config, error) {
	if spec.MongoDB == nil {
		return Config{}, fmt.Errorf("spec.mongodb is required for a mongodb sink")
	}
	cfg := Config{Database: spec.MongoDB.Database, Collection: spec.MongoDB.Collection, Cluster: spec.Cluster, CA: ca,
		Existing:           spec.Provisioning != nil && spec.Provisioning.Mode == "existing",
		InsecureSkipVerify: spec.TLS != nil && spec.TLS.InsecureSkipVerify}
	for _, k := range uriKeys {
		if v := secret[k]; len(v) > 0 {
			cfg.URI = string(v)
			break
		}
	}
	if cfg.URI == "" {
		return Config{}, fmt.Errorf("Secret %s has none of the keys uri, url, connectionString, MONGODB_URI", spec.MongoDB.DatabaseRef.Name)
	}
	return cfg, nil
}

// CredentialsRef is the Secret holding the URI.
func CredentialsRef(spec *kollectv1alpha1.KollectDatabaseSinkSpec) *kollectv1alpha1.SecretReference {
	if spec.MongoDB != nil {
		return &spec.MongoDB.DatabaseRef
	}
	return spec.SecretRef
}
