package inventory

import (
	"sort"

	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/model/rows"
)

// rowSet aggregates the rows of an inventory's targets, and keeps them in
// canonical order from one export to the next: an export after k changes
// sorts k rows and merges, instead of sorting every row again.
type rowSet struct {
	// rows are every target's rows, each with the target that sent it.
	rows index
	refs map[messages.TargetRef]*messages.TargetRef // one pointer per target, for held.from

	sorted []*rows.Row // canonical order at the last list; never modified (snapshots share it)
	// The changes since, by row rather than by key (a pointer hashes in a
	// fraction of the time a key's three strings take): left are rows
	// replaced or deleted, came the rows put, some since replaced or
	// deleted in turn, some more than once.
	left map[*rows.Row]bool
	came []*rows.Row
	// shared holds, for a key more than one target sends, every holder's
	// row. A row's key is (targetNamespace, targetName, uid), the sinks'
	// identity too, so a KollectTarget and a KollectClusterTarget of one
	// name over one object send one key: the inventory exports the row of
	// the first holder in TargetRef order (the same after any restart),
	// and a holder that goes (suspended, deleted, its object no longer
	// matching) leaves the key to the next instead of deleting it.
	shared map[rows.Key]map[*messages.TargetRef]*rows.Row
}

type held struct {
	row  *rows.Row
	from *messages.TargetRef
}

func newRowSet() *rowSet {
	return &rowSet{rows: index{by: map[origin]map[string]held{}}, refs: map[messages.TargetRef]*messages.TargetRef{}, left: map[*rows.Row]bool{},
		shared: map[rows.Key]map[*messages.TargetRef]*rows.Row{}}
}

// index holds rows by key: by the target part of the key (few), then by
// UID. A map keyed by the whole key held its three strings in every slot,
// 48 bytes; this one holds the UID's 16. n counts the rows.
type index struct {
	by map[origin]map[string]held
	n  int
}

// origin is the target part of a row's key.
type origin struct{ namespace, name string }

func originOf(k rows.Key) origin { return origin{k.TargetNamespace, k.TargetName} }

func (x *index) get(k rows.Key) (held, bool) {
	h, ok := x.by[originOf(k)][k.UID]
	return h, ok
}

// put stores h at k; size, when set, is asked only when k's target part
// has no map yet, and sizes the new one.
func (x *index) put(k rows.Key, h held, size func(origin) int) {
	o := originOf(k)
	m := x.by[o]
	if m == nil {
		hint := 0
		if size != nil {
			hint = size(o)
		}
		m = make(map[string]held, hint)
		x.by[o] = m
	}
	n := len(m)
	m[k.UID] = h
	x.n += len(m) - n
}

func (x *index) del(k rows.Key) {
	o := originOf(k)
	if m := x.by[o]; m != nil {
		n := len(m)
		delete(m, k.UID)
		x.n -= n - len(m)
		if len(m) == 0 {
			delete(x.by, o)
		}
	}
}

func (x *index) len() int { return x.n }

// each calls fn for every row; fn may delete the row it is given.
func (x *index) each(fn func(k rows.Key, h held)) {
	for o, m := range x.by {
		for uid, h := range m {
			fn(rows.Key{TargetNamespace: o.namespace, TargetName: o.name, UID: uid}, h)
		}
	}
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
	var size func(origin) int
	if len(m.Upserts) > 64 { // a list: a new map grows once, not by doubling
		var sizes map[origin]int
		size = func(o origin) int {
			if sizes == nil {
				sizes = map[origin]int{}
				for _, r := range m.Upserts {
					sizes[origin{r.TargetNamespace, r.TargetName}]++
				}
			}
			return sizes[o]
		}
	}
	changed := false
	if m.Replace { // a target's complete list: rare (subscribe, relist), so one pass over every row
		incoming := make(map[rows.Key]bool, len(m.Upserts))
		for _, r := range m.Upserts {
			incoming[r.Key()] = true
		}
		for _, k := range s.keysOf(from) {
			if !incoming[k] {
				changed = s.unset(k, from) || changed
			}
		}
	}
	for _, k := range m.Deletes {
		changed = s.unset(k, from) || changed
	}
	for _, r := range m.Upserts {
		changed = s.set(r.Key(), from, r, size) || changed
	}
	return changed
}

// keysOf lists the keys from holds.
func (s *rowSet) keysOf(from *messages.TargetRef) []rows.Key {
	var out []rows.Key
	s.rows.each(func(k rows.Key, h held) {
		if h.from == from {
			out = append(out, k)
		}
	})
	for k, holders := range s.shared {
		if cur, _ := s.rows.get(k); cur.from != from {
			if _, ok := holders[from]; ok {
				out = append(out, k) // held, not shown
			}
		}
	}
	return out
}

// set makes r from's row at k; it reports whether the row shown changed.
func (s *rowSet) set(k rows.Key, from *messages.TargetRef, r *rows.Row, size func(origin) int) bool {
	cur, ok := s.rows.get(k)
	holders := s.shared[k]
	switch {
	case !ok:
		s.rows.put(k, held{row: r, from: from}, size)
		s.record(nil, r)
		return true
	case holders == nil && cur.from == from:
		if cur.row.Equal(r) {
			return false
		}
		s.rows.put(k, held{row: r, from: from}, size)
		s.record(cur.row, r)
		return true
	case holders == nil:
		holders = map[*messages.TargetRef]*rows.Row{cur.from: cur.row}
		s.shared[k] = holders
	}
	holders[from] = r
	return s.show(k, cur, holders)
}

// unset removes from's row at k; it reports whether the row shown
// changed.
func (s *rowSet) unset(k rows.Key, from *messages.TargetRef) bool {
	cur, ok := s.rows.get(k)
	if !ok {
		return false
	}
	holders := s.shared[k]
	if holders == nil {
		if cur.from != from {
			return false
		}
		s.rows.del(k)
		s.record(cur.row, nil)
		return true
	}
	if _, ok := holders[from]; !ok {
		return false
	}
	delete(holders, from)
	return s.show(k, cur, holders)
}

// show makes the first of holders in TargetRef order the row shown at k,
// cur being the one shown so far; it reports whether that changed.
func (s *rowSet) show(k rows.Key, cur held, holders map[*messages.TargetRef]*rows.Row) bool {
	var first *messages.TargetRef
	for ref := range holders {
		if first == nil || ref.String() < first.String() {
			first = ref
		}
	}
	if len(holders) <= 1 {
		delete(s.shared, k)
	}
	if first == nil {
		s.rows.del(k)
		s.record(cur.row, nil)
		return true
	}
	if first == cur.from && holders[first].Equal(cur.row) {
		return false
	}
	s.rows.put(k, held{row: holders[first], from: first}, nil)
	s.record(cur.row, holders[first])
	return true
}

// record notes that old left (when set) and r came (when set) since the
// last list. Once the changes pass three quarters of the rows the next
// list sorts every row, so nothing is recorded until then: an inventory
// that does not list (nothing to export to, a target still missing) holds
// no more than that. Below it, merging the changes into the last order is
// the faster list (BenchmarkList, 100,000 rows: after 50,000 new rows 53
// against 73 ms; after 30,000 updates, 60,000 changes, 48 against 61 ms;
// after 50,000 updates 79 against 67 ms).
func (s *rowSet) record(old, r *rows.Row) {
	if s.sorted == nil {
		return
	}
	if old != nil {
		s.left[old] = true
	}
	if r != nil {
		s.came = append(s.came, r)
	}
	if len(s.left)+len(s.came) > s.rows.len()*3/4+64 {
		s.forget(nil)
	}
}

// drop removes every row of a target.
func (s *rowSet) drop(t messages.TargetRef) bool {
	from := s.refs[t]
	if from == nil {
		return false
	}
	delete(s.refs, t)
	dropped := false
	for _, k := range s.keysOf(from) {
		dropped = s.unset(k, from) || dropped
	}
	return dropped
}

// list returns the rows in canonical order; with dedupeByUID one row per
// object (namespace, uid) remains, the first in canonical order. The slice
// is the caller's to share, never to modify.
func (s *rowSet) list(dedupeByUID bool) []*rows.Row {
	if dedupeByUID {
		s.forget(nil) // the order kept is for the plain list
		return s.deduped()
	}
	var out []*rows.Row
	if s.sorted == nil { // never listed, or changes past three quarters of the rows since
		out = s.sortAll()
	} else {
		out = s.merged()
	}
	s.forget(out)
	return out
}

// sortAll is every row in canonical order, sorted from scratch.
func (s *rowSet) sortAll() []*rows.Row {
	out := make([]*rows.Row, 0, s.rows.len())
	s.rows.each(func(_ rows.Key, h held) { out = append(out, h.row) })
	rows.Sort(out)
	return out
}

// merged is every row in canonical order from the last list's order and
// the changes since. Rows that did not leave since keep their place; a row
// that left for one with the same order fields gives it its place; the
// rest of those that came, and are still held, are sorted and merged in.
func (s *rowSet) merged() []*rows.Row {
	n := s.rows.len()
	kept := make([]*rows.Row, 0, n)
	placed := map[*rows.Row]bool{}
	for _, r := range s.sorted {
		if !s.left[r] {
			kept = append(kept, r)
			continue
		}
		if cur, _ := s.rows.get(r.Key()); cur.row != nil && !placed[cur.row] && rows.Compare(cur.row, r) == 0 {
			kept = append(kept, cur.row)
			placed[cur.row] = true
		}
	}
	var added []*rows.Row
	for _, r := range s.came {
		if cur, _ := s.rows.get(r.Key()); cur.row == r && !placed[r] {
			added = append(added, r)
			placed[r] = true
		}
	}
	rows.Sort(added)
	out := make([]*rows.Row, 0, n)
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
	return append(append(out, kept[i:]...), added[j:]...)
}

// forget records sorted as the last list's order, with no change since.
func (s *rowSet) forget(sorted []*rows.Row) {
	s.sorted, s.left, s.came = sorted, map[*rows.Row]bool{}, nil
}

func (s *rowSet) deduped() []*rows.Row {
	all := make([]*rows.Row, 0, s.rows.len())
	s.rows.each(func(_ rows.Key, h held) { all = append(all, h.row) })
	return firstPerObject(all)
}

// firstPerObject keeps one row per object (namespace, uid), the first in
// canonical order, and returns them in canonical order.
func firstPerObject(rs []*rows.Row) []*rows.Row {
	type obj struct{ ns, uid string }
	best := make(map[obj]*rows.Row, len(rs))
	for _, r := range rs {
		k := obj{r.Namespace, r.UID}
		if b, ok := best[k]; !ok || rows.Compare(r, b) < 0 {
			best[k] = r
		}
	}
	out := make([]*rows.Row, 0, len(best))
	for _, r := range best {
		out = append(out, r)
	}
	rows.Sort(out)
	return out
}

func (s *rowSet) len() int { return s.rows.len() }

// shards counts rows and contributing targets per target namespace, in
// namespace order.
func (s *rowSet) shards() []Shard {
	items := map[string]int{}
	targets := map[string]map[string]bool{}
	for o, m := range s.rows.by {
		items[o.namespace] += len(m)
		if targets[o.namespace] == nil {
			targets[o.namespace] = map[string]bool{}
		}
		targets[o.namespace][o.name] = true
	}
	out := make([]Shard, 0, len(items))
	for ns, n := range items {
		out = append(out, Shard{Namespace: ns, Items: n, Targets: len(targets[ns])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out
}

// shardChecksums fingerprints each target namespace's rows of a snapshot:
// canonical order starts with the target namespace, so each shard's rows
// are one run, hashed in their order. A shard's checksum is the items
// fingerprint of its rows: rows.Checksum over them, without an envelope.
func shardChecksums(rs []*rows.Row) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(rs); {
		j := i + 1
		for j < len(rs) && rs[j].TargetNamespace == rs[i].TargetNamespace {
			j++
		}
		out[rs[i].TargetNamespace] = rows.Checksum(rs[i:j])
		i = j
	}
	return out
}
