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
// are usually the same *Row in both snapshots, so the common case costs a
// pointer comparison per row.
func Diff(prev, next *Snapshot) *Delta {
	d := &Delta{Prev: prev, Next: next}
	if next == nil {
		return d
	}
	if prev == nil {
		d.Upserts = next.Rows
		d.Replaced = make([]*Row, len(next.Rows))
		return d
	}
	old := make(map[Key]*Row, len(prev.Rows))
	for _, r := range prev.Rows {
		old[r.Key()] = r
	}
	for _, r := range next.Rows {
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
		for _, r := range prev.Rows { // keep canonical order
			if _, gone := old[r.Key()]; gone {
				d.Deletes = append(d.Deletes, r)
			}
		}
	}
	return d
}

// Sum is the lower-case hex SHA-256 of the row's canonical JSON: a content
// fingerprint of one row ("" for nil).
func (r *Row) Sum() string {
	if r == nil {
		return ""
	}
	s := sha256.Sum256(r.raw)
	return hex.EncodeToString(s[:])
}
