package backends_test

import (
	"fmt"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/pipeline/backends"
)

// The registry holds one Type per backend: its family and name, the
// Secret it reads, how it is built and what its probe checks. A
// KollectSnapshotSink with spec.git and no type is a Git sink, as
// upstream reads it.
func ExampleRegistry() {
	registry := backends.Default(endpoint.Policy{})
	fmt.Println(registry.Names())

	sink := &kollectv1alpha1.KollectSnapshotSink{Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Git: &kollectv1alpha1.GitSpec{}}}
	t, err := registry.Type(sink)
	fmt.Println(t.Family, t.Name, err)
	fmt.Println(t.Verified)

	_, err = registry.Type(&kollectv1alpha1.KollectDatabaseSink{Spec: kollectv1alpha1.KollectDatabaseSinkSpec{Type: "cassandra"}})
	fmt.Println(err)
	// Output:
	// [database/bigquery database/mongodb database/postgres event/kafka event/nats snapshot/azureblob snapshot/gcs snapshot/git snapshot/gitlab snapshot/s3]
	// snapshot git <nil>
	// TLS and git remote reachability verified
	// cassandra sinks are not implemented in this version of Kollect
}
