package informers

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// Corrupt replaces the cached entry at key, in the store's current cache,
// with bytes its codec cannot decode: an entry the operator could not read
// back, which nothing outside a test can produce.
func Corrupt(s Store, key string) error {
	var idx cache.Indexer
	var o any
	for _, i := range s.(entryStore).e.current.Load().indexers() {
		if got, ok, _ := i.GetByKey(key); ok {
			idx, o = i, got
		}
	}
	if idx == nil {
		return fmt.Errorf("no cached %s", key)
	}
	c := o.(*compact)
	return idx.Update(&compact{key: c.key, z: "\xff\x00\x13", codec: c.codec})
}
