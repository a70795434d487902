package inventory

import (
	"slices"
	"sort"

	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/pipeline/model/rows"
)

// rowSet aggregates the rows of an inventory's targets, and keeps them in
// canonical order from one export to the next: an export after k changes
// sorts k rows and merges, instead of sorting every row again.
type rowSet struct {
	rows     map[rows.Key]*rows.Row
	byTarget map[messages.TargetRef]map[rows.Key]bool

	sorted  []*rows.Row       // canonical order at the last list; never modified (snapshots share it)
	touched map[rows.Key]bool // keys upserted or deleted since
}

func newRowSet() *rowSet {
	return &rowSet{rows: map[rows.Key]*rows.Row{}, byTarget: map[messages.TargetRef]map[rows.Key]bool{}, touched: map[rows.Key]bool{}}
}

// apply merges a target's changes; it reports whether anything changed.
func (s *rowSet) apply(m *messages.RowsChanged) bool {
	keys := s.byTarget[m.Target]
	if keys == nil {
		keys = map[rows.Key]bool{}
		s.byTarget[m.Target] = keys
	}
	changed := false
	if m.Replace {
		incoming := make(map[rows.Key]bool, len(m.Upserts))
		for _, r := range m.Upserts {
			incoming[r.Key()] = true
		}
		for k := range keys {
			if !incoming[k] {
				delete(s.rows, k)
				delete(keys, k)
				s.touched[k], changed = true, true
			}
		}
	}
	for _, k := range m.Deletes {
		if _, ok := s.rows[k]; ok {
			delete(s.rows, k)
			delete(keys, k)
			s.touched[k], changed = true, true
		}
	}
	for _, r := range m.Upserts {
		k := r.Key()
		if old, ok := s.rows[k]; !ok || !old.Equal(r) {
			s.rows[k] = r
			keys[k] = true
			s.touched[k], changed = true, true
		}
	}
	return changed
}

// drop removes every row of a target.
func (s *rowSet) drop(t messages.TargetRef) bool {
	keys := s.byTarget[t]
	for k := range keys {
		delete(s.rows, k)
		s.touched[k] = true
	}
	delete(s.byTarget, t)
	return len(keys) > 0
}

// list returns the rows in canonical order; with dedupeByUID one row per
// object (namespace, uid) remains, the first in canonical order. The slice
// is the caller's to share, never to modify.
func (s *rowSet) list(dedupeByUID bool) []*rows.Row {
	if dedupeByUID {
		s.sorted, s.touched = nil, map[rows.Key]bool{} // the order kept is for the plain list
		return s.deduped()
	}
	if s.sorted == nil || len(s.touched) > len(s.rows)/2 {
		out := make([]*rows.Row, 0, len(s.rows))
		for _, r := range s.rows {
			out = append(out, r)
		}
		slices.SortFunc(out, rows.Compare)
		s.sorted, s.touched = out, map[rows.Key]bool{}
		return out
	}
	// Rows untouched since the last list keep their place; a touched row
	// whose order fields are unchanged takes its old place (and leaves the
	// touched set); the rest are sorted and merged in.
	kept := make([]*rows.Row, 0, len(s.rows))
	for _, r := range s.sorted {
		k := r.Key()
		if !s.touched[k] {
			kept = append(kept, r)
			continue
		}
		if cur := s.rows[k]; cur != nil && rows.Compare(cur, r) == 0 {
			kept = append(kept, cur)
			delete(s.touched, k)
		}
	}
	var added []*rows.Row
	for k := range s.touched {
		if cur := s.rows[k]; cur != nil {
			added = append(added, cur)
		}
	}
	slices.SortFunc(added, rows.Compare)
	out := make([]*rows.Row, 0, len(s.rows))
	i, j := 0, 0
	for i < len(kept) && j < len(added) {
		if rows.Compare(added[j], kept[i]) < 0 {
			out = append(out, added[j])
			j++
		} else {
			out = append(out, kept[i])
			i++
		}
	}
	out = append(append(out, kept[i:]...), added[j:]...)
	s.sorted, s.touched = out, map[rows.Key]bool{}
	return out
}

func (s *rowSet) deduped() []*rows.Row {
	type obj struct{ ns, uid string }
	best := map[obj]*rows.Row{}
	for _, r := range s.rows {
		k := obj{r.Namespace, r.UID}
		if b, ok := best[k]; !ok || rows.Compare(r, b) < 0 {
			best[k] = r
		}
	}
	out := make([]*rows.Row, 0, len(best))
	for _, r := range best {
		out = append(out, r)
	}
	slices.SortFunc(out, rows.Compare)
	return out
}

func (s *rowSet) len() int { return len(s.rows) }

// shards counts rows and contributing targets per target namespace, in
// namespace order.
func (s *rowSet) shards() []Shard {
	items := map[string]int{}
	targets := map[string]map[string]bool{}
	for _, r := range s.rows {
		items[r.TargetNamespace]++
		if targets[r.TargetNamespace] == nil {
			targets[r.TargetNamespace] = map[string]bool{}
		}
		targets[r.TargetNamespace][r.TargetName] = true
	}
	out := make([]Shard, 0, len(items))
	for ns, n := range items {
		out = append(out, Shard{Namespace: ns, Items: n, Targets: len(targets[ns])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out
}
