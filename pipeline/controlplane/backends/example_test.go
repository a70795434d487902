package backends_test

import (
	"fmt"
	"sort"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/controlplane/backends"
	"kollect.dev/kollect/pipeline/model/endpoint"
)

// The registry maps a sink object's family and type to the factory that
// builds its backend. A KollectSnapshotSink with spec.git and no type is a
// Git sink, as upstream reads it.
func ExampleRegistry() {
	registry := backends.Default(endpoint.Policy{})
	var keys []string
	for k := range registry {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Println(keys)

	sink := &kollectv1alpha1.KollectSnapshotSink{Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Git: &kollectv1alpha1.GitSpec{}}}
	family, typ := backends.Kind(sink)
	_, ok := registry[family+"/"+typ]
	fmt.Println(family, typ, ok)
	// Output:
	// [database/postgres event/kafka event/nats snapshot/git]
	// snapshot git true
}
