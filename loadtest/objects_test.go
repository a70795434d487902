package main

import (
	"fmt"
	"maps"
	"testing"
)

func TestPerNamespaceCountsWhatAtPlaces(t *testing.T) {
	for _, tc := range []struct{ n, namespaces int }{{2000, 100}, {3005, 300}, {7, 10}} {
		t.Run(fmt.Sprintf("%d in %d", tc.n, tc.namespaces), func(t *testing.T) {
			o := newObjects(tc.n, tc.namespaces, 0)
			placed := map[string]int{}
			for i := range tc.n {
				placed[o.at(i).namespace]++
			}
			for i := range tc.namespaces {
				if _, ok := placed[loadNamespace(i)]; !ok {
					placed[loadNamespace(i)] = 0
				}
			}
			if got := o.perNamespace(); !maps.Equal(got, placed) {
				t.Fatalf("perNamespace %v, at places %v", got, placed)
			}
		})
	}
}
