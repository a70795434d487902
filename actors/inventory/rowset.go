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
	// rows are every target's rows, each with the target that sent it
	// (one index, not one per target: a second map of every key cost as
	// much as this one).
	rows map[rows.Key]held
	refs map[messages.TargetRef]*messages.TargetRef // one pointer per target, for held.from

	sorted  []*rows.Row       // canonical order at the last list; never modified (snapshots share it)
	touched map[rows.Key]bool // keys upserted or deleted since
}

type held struct {
	row  *rows.Row
	from *messages.TargetRef
}

func newRowSet() *rowSet {
	return &rowSet{rows: map[rows.Key]held{}, refs: map[messages.TargetRef]*messages.TargetRef{}, touched: map[rows.Key]bool{}}
}

func (s *rowSet) ref(t messages.TargetRef) *messages.TargetRef {
	p := s.refs[t]
	if p == nil {
		p = &t
		s.refs[t] = p
	}
	return p
}

// apply merges a target's changes; it reports whether anything changed. A
// target replaces and deletes only rows it sent.
func (s *rowSet) apply(m *messages.RowsChanged) bool {
	from := s.ref(m.Target)
	if len(s.rows) == 0 && len(m.Upserts) > 64 { // a first list: the index grows once, not by doubling
		s.rows = make(map[rows.Key]held, len(m.Upserts))
	}
	changed := false
	if m.Replace { // a target's complete list: rare (subscribe, relist), so one pass over every row
		incoming := make(map[rows.Key]bool, len(m.Upserts))
		for _, r := range m.Upserts {
			incoming[r.Key()] = true
		}
		for k, h := range s.rows {
			if h.from == from && !incoming[k] {
				delete(s.rows, k)
				s.touched[k], changed = true, true
			}
		}
	}
	for _, k := range m.Deletes {
		if h, ok := s.rows[k]; ok && h.from == from {
			delete(s.rows, k)
			s.touched[k], changed = true, true
		}
	}
	for _, r := range m.Upserts {
		k := r.Key()
		if old, ok := s.rows[k]; !ok || old.from != from || !old.row.Equal(r) {
			s.rows[k] = held{row: r, from: from}
			s.touched[k], changed = true, true
		}
	}
	return changed
}

// drop removes every row of a target.
func (s *rowSet) drop(t messages.TargetRef) bool {
	from := s.refs[t]
	if from == nil {
		return false
	}
	delete(s.refs, t)
	dropped := false
	for k, h := range s.rows {
		if h.from == from {
			delete(s.rows, k)
			s.touched[k], dropped = true, true
		}
	}
	return dropped
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
		for _, h := range s.rows {
			out = append(out, h.row)
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
		if cur := s.rows[k].row; cur != nil && rows.Compare(cur, r) == 0 {
			kept = append(kept, cur)
			delete(s.touched, k)
		}
	}
	var added []*rows.Row
	for k := range s.touched {
		if cur := s.rows[k].row; cur != nil {
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
	for _, h := range s.rows {
		r := h.row
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
	for _, h := range s.rows {
		r := h.row
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
