package rows

import (
	"crypto/sha256"
	"encoding/hex"
)

// Delta is what changed between the snapshot a backend last acknowledged
// (Prev) and the one it must hold next (Next). Backends that keep one
// record per row write only Upserts and Deletes; a nil Prev means the
// backend's state is unknown (first export of this process), so Upserts
// holds every row and the backend must reconcile deletions itself.
type Delta struct {
	Prev, Next *Snapshot
	// Upserts are rows of Next that are new or whose content changed.
	Upserts []*Row
	// Deletes are rows of Prev whose key is absent from Next.
	Deletes []*Row
	// Replaced pairs each upsert with the row it replaces (nil when new), in
	// the order of Upserts.
	Replaced []*Row
	// Export identifies the export this delta belongs to: the same for
	// every attempt of one export, different for the next one. Event
	// backends put it in their change ids, so a broker's duplicate window
	// drops a retry but not the same change made again (A→B→A→B).
	Export string
	// Parts splits Next for a snapshot binding whose size ceiling it
	// exceeds (Partition); nil or one part: the export is one document.
	Parts []*Part
}

// Full reports whether the backend's previous state is unknown.
func (d *Delta) Full() bool { return d.Prev == nil }

// Empty reports whether nothing changed.
func (d *Delta) Empty() bool { return len(d.Upserts) == 0 && len(d.Deletes) == 0 }

// Diff computes the delta from prev (nil: unknown) to next. Unchanged rows
// are usually the same *Row in both snapshots, and snapshots built by
// NewSnapshot are in canonical order, so the common case walks both once
// at a pointer comparison per row, hashing nothing. Snapshots built by
// hand are matched by key.
//
// A partial snapshot (one that keeps targets' rows) on either side makes
// the delta full: what the backend holds of the kept targets is in neither
// snapshot, so the backend reconciles against what it holds, and a target
// that lists again has its rows deleted meanwhile removed.
func Diff(prev, next *Snapshot) *Delta {
	if prev != nil && next != nil && (prev.Partial() || next.Partial()) {
		prev = nil
	}
	d := &Delta{Prev: prev, Next: next}
	if next == nil {
		return d
	}
	if prev == nil {
		d.Upserts = next.Rows
		d.Replaced = make([]*Row, len(next.Rows))
		return d
	}
	if prev.Ordered() && next.Ordered() {
		d.walk(prev.Rows, next.Rows)
	} else {
		d.match(prev.Rows, next.Rows)
	}
	return d
}

// Align walks two row lists, both in canonical order, in one pass, and
// calls fn for each step: (i, j) when prev[i] and next[j] stand in the same
// place with the same order fields (the same row, or the same key with
// content to compare), (i, -1) for a row of prev that next lacks there,
// (-1, j) for a row of next that prev lacks there. A row whose order
// fields changed (a new version, say) is both of the last two. Unchanged
// rows are usually the same *Row, which costs a pointer comparison.
func Align(prev, next []*Row, fn func(i, j int)) {
	i, j := 0, 0
	for i < len(prev) && j < len(next) {
		c := 0
		if prev[i] != next[j] {
			c = Compare(prev[i], next[j])
		}
		switch {
		case c == 0:
			fn(i, j)
			i, j = i+1, j+1
		case c < 0:
			fn(i, -1)
			i++
		default:
			fn(-1, j)
			j++
		}
	}
	for ; i < len(prev); i++ {
		fn(i, -1)
	}
	for ; j < len(next); j++ {
		fn(-1, j)
	}
}

// walk diffs two snapshots in canonical order (Align). A row that moved
// shows up as one that left and one that arrived; those few are paired by
// key afterwards, so it is an upsert replacing the old row, never a delete
// of its key.
func (d *Delta) walk(prev, next []*Row) {
	var left []*Row // prev rows not found in place, in prev's order
	var came []int  // indexes in Upserts of next rows not found in place
	Align(prev, next, func(i, j int) {
		switch {
		case j < 0:
			left = append(left, prev[i])
		case i < 0:
			came = append(came, len(d.Upserts))
			d.Upserts, d.Replaced = append(d.Upserts, next[j]), append(d.Replaced, nil)
		case !next[j].Equal(prev[i]):
			d.Upserts, d.Replaced = append(d.Upserts, next[j]), append(d.Replaced, prev[i])
		}
	})
	if len(left) == 0 {
		return
	}
	if len(came) > 0 {
		at := make(map[Key]int, len(left))
		for k, r := range left {
			at[r.Key()] = k
		}
		for _, u := range came {
			if k, ok := at[d.Upserts[u].Key()]; ok {
				d.Replaced[u], left[k] = left[k], nil
			}
		}
	}
	for _, r := range left {
		if r != nil {
			d.Deletes = append(d.Deletes, r)
		}
	}
}

// match diffs two snapshots whatever their order, by key.
func (d *Delta) match(prev, next []*Row) {
	old := make(map[Key]*Row, len(prev))
	for _, r := range prev {
		old[r.Key()] = r
	}
	for _, r := range next {
		k := r.Key()
		o, ok := old[k]
		if ok {
			delete(old, k)
			if r.Equal(o) {
				continue
			}
		}
		d.Upserts = append(d.Upserts, r)
		d.Replaced = append(d.Replaced, o)
	}
	if len(old) > 0 {
		for _, r := range prev { // keep canonical order
			if _, gone := old[r.Key()]; gone {
				d.Deletes = append(d.Deletes, r)
			}
		}
	}
}

// Sum is the lower-case hex SHA-256 of the row's canonical JSON: a content
// fingerprint of one row ("" for nil).
func (r *Row) Sum() string {
	if r == nil {
		return ""
	}
	var buf [1024]byte
	s := sha256.Sum256(r.AppendJSON(buf[:0]))
	return hex.EncodeToString(s[:])
}
