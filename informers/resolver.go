package informers

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// ErrNotServed means the API server does not serve the kind (its CRD is
// not installed).
var ErrNotServed = errors.New("kind is not served by the API server")

// Resolver maps kinds to resources through discovery.
type Resolver struct {
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// NewResolver builds a resolver on a discovery client.
func NewResolver(disco discovery.DiscoveryInterface) *Resolver {
	return &Resolver{mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))}
}

// Resolve maps a kind to its resource through discovery. A miss refreshes
// discovery once, so a CRD installed later is found.
func (r *Resolver) Resolve(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	mapping, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		r.mapper.Reset()
		mapping, err = r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return schema.GroupVersionResource{}, false, fmt.Errorf("%s: %w", gvk, ErrNotServed)
		}
		return schema.GroupVersionResource{}, false, fmt.Errorf("resolve %s: %w", gvk, err)
	}
	return mapping.Resource, mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}
