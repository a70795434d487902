package informers

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Event is one change of one object.
type Event struct {
	GVR     schema.GroupVersionResource
	Key     string // namespace/name, or name for cluster-scoped objects
	Deleted bool
	Object  *unstructured.Unstructured // nil only for deletions of unknown state
	// Resync means the shared cache was rebuilt: list it again (Key and
	// Object are empty). Deletes made while it was rebuilt reach the
	// subscriber only this way.
	Resync bool
}

// Subscriber receives events. Notify is called on informer goroutines and
// must return at once.
type Subscriber interface {
	Notify(ev Event)
}

// NamespaceSubscriber learns that a namespace's labels or annotations
// changed, or that it appeared or went away.
type NamespaceSubscriber interface {
	NamespaceChanged(name string)
}
