package informers

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// compact is what the cache holds for one object: its key (namespace/name,
// or name when cluster-scoped; the name and namespace are parts of it) and
// the JSON of the object reduced to what the subscribers read, compressed
// by its generation's codec. A decoded object costs several times its JSON
// in maps; the cache is read only to evaluate everything again (a new
// profile, a namespace whose labels changed), so it keeps the JSON and
// decodes on demand.
//
// fresh carries the decoded object from the transform to the event
// handler, which takes it once; the cache never keeps it.
type compact struct {
	key   string
	z     string
	codec *codec
	fresh atomic.Pointer[unstructured.Unstructured]
}

var (
	_ runtime.Object            = (*compact)(nil)
	_ metav1.ObjectMetaAccessor = (*compact)(nil)
)

// namespace is the namespace part of the key ("" when cluster-scoped).
func (c *compact) namespace() string {
	ns, _, _ := cache.SplitMetaNamespaceKey(c.key) // the key is the informer's own
	return ns
}

// GetObjectMeta implements metav1.ObjectMetaAccessor for the cache's key
// function, its only reader. The metadata is built on demand (an embedded
// ObjectMeta would cost every cached object about 300 bytes) and names the
// object by its whole key, namespace included: the key function then
// returns the entry's own key string, and the cache's map shares it
// instead of joining namespace and name into a copy (25 bytes an object).
func (c *compact) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: c.key}
}

// GetObjectKind implements runtime.Object; the cache needs no kind.
func (c *compact) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. The JSON is never modified, so
// copies share it.
func (c *compact) DeepCopyObject() runtime.Object {
	return &compact{key: c.key, z: c.z, codec: c.codec}
}

// toCompact reduces u (already pruned) to a cache entry that hands u to the
// event handler once.
func toCompact(u *unstructured.Unstructured, cd *codec) (*compact, error) {
	raw, err := json.Marshal(u.Object)
	var z string
	if err == nil {
		z, err = cd.encode(raw)
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s/%s for the cache: %w", u.GetNamespace(), u.GetName(), err)
	}
	c := &compact{key: cache.MetaObjectToName(u).String(), z: z, codec: cd}
	c.fresh.Store(u)
	return c, nil
}

// object returns the decoded object: the one the transform saw, the first
// time, and a new decoding of the JSON after that.
func (c *compact) object() (*unstructured.Unstructured, error) {
	if u := c.fresh.Swap(nil); u != nil {
		return u, nil
	}
	return c.decode()
}

// decode decodes the cached JSON, leaving a fresh object to its handler.
func (c *compact) decode() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := c.codec.decode(c.z, u.UnmarshalJSON); err != nil {
		return nil, fmt.Errorf("decode cached %s: %w", c.key, err)
	}
	return u, nil
}
