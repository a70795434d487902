package bigquery

import (
	"fmt"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// KeyName is the Secret key holding a service-account key.
const KeyName = "credentials.json"

// FromSpec builds a BigQuery sink configuration from a database sink and
// the data of its Secret (nil: Application Default Credentials). The
// endpoint and HTTP client are the caller's.
func FromSpec(spec *kollectv1alpha1.KollectDatabaseSinkSpec, secret map[string][]byte) (Config, error) {
	bq := spec.BigQuery
	if bq == nil {
		return Config{}, fmt.Errorf("spec.bigquery is required for a bigquery sink")
	}
	cfg := Config{Project: bq.Project, Dataset: bq.Dataset, Table: bq.Table, Location: bq.Location, Cluster: spec.Cluster,
		Existing: spec.Provisioning != nil && spec.Provisioning.Mode == "existing"}
	if bq.SecretRef != nil {
		cfg.Key = secret[KeyName]
		if len(cfg.Key) == 0 {
			return Config{}, fmt.Errorf("Secret %s has no key %s", bq.SecretRef.Name, KeyName)
		}
	}
	return cfg, nil
}

// CredentialsRef is the Secret holding the service-account key, or nil
// (Application Default Credentials).
func CredentialsRef(spec *kollectv1alpha1.KollectDatabaseSinkSpec) *kollectv1alpha1.SecretReference {
	if spec.BigQuery != nil {
		return spec.BigQuery.SecretRef
	}
	return nil
}
