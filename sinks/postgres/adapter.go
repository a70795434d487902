package postgres

import (
	"fmt"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// dsnKeys are the Secret keys a DSN is read from, first non-empty wins.
var dsnKeys = []string{"dsn", "url", "connectionString", "DATABASE_URL"}

// FromSpec builds a Postgres sink configuration from a database sink, the
// data of its DSN Secret and a PEM CA bundle (nil when none).
func FromSpec(spec *kollectv1alpha1.KollectDatabaseSinkSpec, secret map[string][]byte, ca []byte) (Config, error) {
	if spec.Postgres == nil {
		return Config{}, fmt.Errorf("spec.postgres is required for a postgres sink")
	}
	cfg := Config{Schema: string(spec.Postgres.Schema), Table: string(spec.Postgres.Table), Cluster: spec.Cluster, CA: ca,
		Existing: spec.Provisioning != nil && spec.Provisioning.Mode == "existing"}
	for _, k := range dsnKeys {
		if v := secret[k]; len(v) > 0 {
			cfg.DSN = string(v)
			break
		}
	}
	if cfg.DSN == "" {
		return Config{}, fmt.Errorf("Secret %s has none of the keys dsn, url, connectionString, DATABASE_URL", spec.Postgres.DatabaseRef.Name)
	}
	cfg.InsecureSkipVerify = spec.TLS != nil && spec.TLS.InsecureSkipVerify
	return cfg, nil
}

// CredentialsRef is the Secret holding the DSN.
func CredentialsRef(spec *kollectv1alpha1.KollectDatabaseSinkSpec) *kollectv1alpha1.SecretReference {
	if spec.Postgres != nil {
		return &spec.Postgres.DatabaseRef
	}
	return spec.SecretRef
}
