package rows

import (
	"runtime"
	"slices"
	"sync"
)

// minSortPart is the fewest rows a worker sorts on its own: below it,
// starting the worker and merging its part cost more than they save.
const minSortPart = 4096

// Sort orders rs canonically (Compare). A large slice is cut in parts
// sorted on up to GOMAXPROCS workers and merged: an inventory builds a
// snapshot of every row while nothing else may be running, and a sort of
// 200,000 rows on one core was most of that build.
func Sort(rs []*Row) {
	workers := min(runtime.GOMAXPROCS(0), len(rs)/minSortPart)
	if workers < 2 {
		slices.SortFunc(rs, Compare)
		return
	}
	sortOn(rs, make([]*Row, len(rs)), workers)
}

// sortOn sorts rs on workers goroutines (this one included), with tmp
// (as long as rs) to merge in; each half merges in its own half of tmp.
func sortOn(rs, tmp []*Row, workers int) {
	if workers < 2 {
		slices.SortFunc(rs, Compare)
		return
	}
	mid := len(rs) / 2
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sortOn(rs[mid:], tmp[mid:], workers-workers/2)
	}()
	sortOn(rs[:mid], tmp[:mid], workers/2)
	wg.Wait()
	merge(rs, mid, tmp)
}

// merge merges the sorted rs[:mid] and rs[mid:] in place, with tmp (at
// least mid long) holding the first run.
func merge(rs []*Row, mid int, tmp []*Row) {
	if mid == 0 || mid == len(rs) || Compare(rs[mid-1], rs[mid]) <= 0 {
		return // already in order
	}
	left := tmp[:mid]
	copy(left, rs[:mid])
	i, j, k := 0, mid, 0
	for i < len(left) && j < len(rs) {
		if Compare(rs[j], left[i]) < 0 {
			rs[k] = rs[j]
			j++
		} else {
			rs[k] = left[i]
			i++
		}
		k++
	}
	copy(rs[k:], left[i:]) // what is left of the second run is in place
}
