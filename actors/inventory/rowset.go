package inventory

import (
	"sort"

	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/pipeline/rows"
)

// rowSet aggregates the rows of an inventory's targets.
type rowSet struct {
	rows     map[rows.Key]*rows.Row
	byTarget map[messages.TargetRef]map[rows.Key]bool
}

func newRowSet() *rowSet {
	return &rowSet{rows: map[rows.Key]*rows.Row{}, byTarget: map[messages.TargetRef]map[rows.Key]bool{}}
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
				changed = true
			}
		}
	}
	for _, k := range m.Deletes {
		if _, ok := s.rows[k]; ok {
			delete(s.rows, k)
			delete(keys, k)
			changed = true
		}
	}
	for _, r := range m.Upserts {
		k := r.Key()
		if old, ok := s.rows[k]; !ok || !old.Equal(r) {
			s.rows[k] = r
			keys[k] = true
			changed = true
		}
	}
	return changed
}

// drop removes every row of a target.
func (s *rowSet) drop(t messages.TargetRef) bool {
	keys := s.byTarget[t]
	for k := range keys {
		delete(s.rows, k)
	}
	delete(s.byTarget, t)
	return len(keys) > 0
}

// list returns the rows; with dedupeByUID one row per object (namespace,
// uid) remains, the first in canonical order.
func (s *rowSet) list(dedupeByUID bool) []*rows.Row {
	out := make([]*rows.Row, 0, len(s.rows))
	if !dedupeByUID {
		for _, r := range s.rows {
			out = append(out, r)
		}
		return out
	}
	type obj struct{ ns, uid string }
	best := map[obj]*rows.Row{}
	for _, r := range s.rows {
		k := obj{r.Namespace, r.UID}
		if b, ok := best[k]; !ok || rows.Compare(r, b) < 0 {
			best[k] = r
		}
	}
	for _, r := range best {
		out = append(out, r)
	}
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
