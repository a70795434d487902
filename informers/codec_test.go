package informers

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"k8s.io/client-go/tools/cache"
)

func configMapJSON(i int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","data":{"version":"v%d"},"kind":"ConfigMap","metadata":{"labels":{"app":"shop"},`+
		`"name":"cm-%06d","namespace":"team-%02d","resourceVersion":"%d","uid":"%08x-1b2c-4d5e-8f90-%012x"}}`, i%5, i, i%40, 7000+3*i, i*7919, i*104729)
}

func TestTheCacheCodecGivesBackWhatItWasGiven(t *testing.T) {
	cases := []struct {
		name  string
		first []byte // the generation's first object: its dictionary
		raw   []byte
		// smallerThan, when set, is the largest size the encoding may have.
		smallerThan int
	}{
		{name: "the first object", first: configMapJSON(1), raw: configMapJSON(1), smallerThan: 32},
		{name: "an object like the first", first: configMapJSON(1), raw: configMapJSON(2), smallerThan: len(configMapJSON(2)) / 2},
		{name: "an object unlike the first", first: configMapJSON(1), raw: []byte(`{"kind":"Node","spec":{"podCIDR":"10.0.0.0/24"},"ünïcode":"日本"}`)},
		{name: "an empty object", first: configMapJSON(1), raw: []byte(`{}`)},
		{name: "a first object past the window", first: []byte(`{"x":"` + strings.Repeat("ab", dictMax) + `"}`), raw: configMapJSON(3)},
		{name: "a large object", first: configMapJSON(1), raw: []byte(`{"data":"` + strings.Repeat("0123456789abcdef", 8<<10) + `"}`), smallerThan: 4 << 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cd := &codec{}
			if _, err := cd.encode(tc.first); err != nil {
				t.Fatal(err)
			}
			if len(cd.dict) > dictMax {
				t.Fatalf("dictionary of %d bytes, past the window of %d", len(cd.dict), dictMax)
			}
			z, err := cd.encode(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if tc.smallerThan > 0 && len(z) >= tc.smallerThan {
				t.Errorf("%d bytes encode to %d, want fewer than %d", len(tc.raw), len(z), tc.smallerThan)
			}
			var got []byte
			if err := cd.decode(z, func(b []byte) error { got = bytes.Clone(b); return nil }); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.raw) {
				t.Fatalf("decoded %q, want %q", got, tc.raw)
			}
		})
	}
}

func TestTheCacheCodecIsSafeForConcurrentUse(t *testing.T) {
	cd := &codec{}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g * 1000; i < g*1000+200; i++ {
				raw := configMapJSON(i)
				z, err := cd.encode(raw)
				if err != nil {
					errs <- err
					return
				}
				err = cd.decode(z, func(b []byte) error {
					if !bytes.Equal(b, raw) {
						return fmt.Errorf("object %d decoded as %q", i, b)
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestACorruptCacheEntryIsAnError(t *testing.T) {
	cd := &codec{}
	if _, err := cd.encode(configMapJSON(1)); err != nil {
		t.Fatal(err)
	}
	c := &compact{key: "team-01/cm-000001", z: "\xff\x00\x13", codec: cd}
	if _, err := c.decode(); err == nil || !strings.Contains(err.Error(), "team-01/cm-000001") {
		t.Fatalf("got %v, want an error naming the object", err)
	}
}

// The cache's map is keyed by each entry's own key string, not by a copy
// the key function joined from namespace and name; the key is the same
// as client-go's for the object.
func TestTheCacheKeysEntriesByTheirOwnKey(t *testing.T) {
	for _, tc := range []struct{ key, namespace string }{
		{"team-01/cm-000001", "team-01"},
		{"cluster-scoped", ""},
	} {
		idx := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
		c := &compact{key: tc.key}
		if err := idx.Add(c); err != nil {
			t.Fatal(err)
		}
		keys := idx.ListKeys()
		if len(keys) != 1 || keys[0] != tc.key {
			t.Fatalf("keys %v, want [%s]", keys, tc.key)
		}
		if unsafe.StringData(keys[0]) != unsafe.StringData(tc.key) {
			t.Errorf("%s: the cache keeps a copy of the key", tc.key)
		}
		if ns := c.namespace(); ns != tc.namespace {
			t.Errorf("%s: namespace %q, want %q", tc.key, ns, tc.namespace)
		}
	}
}
