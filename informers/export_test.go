package informers

import "fmt"

// Corrupt replaces the cached entry at key, in the store's current cache,
// with bytes its codec cannot decode: an entry the operator could not read
// back, which nothing outside a test can produce.
func Corrupt(s Store, key string) error {
	idx := s.(entryStore).e.current.Load().informer.GetIndexer()
	o, ok, err := idx.GetByKey(key)
	if err != nil || !ok {
		return fmt.Errorf("no cached %s (%v)", key, err)
	}
	c := o.(*compact)
	return idx.Update(&compact{key: c.key, z: "\xff\x00\x13", codec: c.codec})
}
