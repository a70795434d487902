package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of every Kollect kind.
var GroupVersion = schema.GroupVersion{Group: "kollect.dev", Version: "v1alpha1"}

// AddToScheme registers every Kollect kind with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&KollectProfile{}, &KollectProfileList{},
		&KollectTarget{}, &KollectTargetList{},
		&KollectClusterTarget{}, &KollectClusterTargetList{},
		&KollectInventory{}, &KollectInventoryList{},
		&KollectClusterInventory{}, &KollectClusterInventoryList{},
		&KollectSnapshotSink{}, &KollectSnapshotSinkList{},
		&KollectDatabaseSink{}, &KollectDatabaseSinkList{},
		&KollectEventSink{}, &KollectEventSinkList{},
		&KollectScope{}, &KollectScopeList{},
		&KollectClusterScope{}, &KollectClusterScopeList{},
		&KollectConnectionTest{}, &KollectConnectionTestList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
