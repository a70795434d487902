package rows

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Part is one part of an export split by a size ceiling:
// a snapshot of some of the rows (canonically ordered, with their own
// checksum, the whole export's identity and time), and its place among
// the parts. Index and Total are 0 for an export in one part.
type Part struct {
	*Snapshot
	Index, Total int
}

// Suffix is the part's file-name suffix, ".part-0001-of-0003", or "" for
// an export in one part.
func (p *Part) Suffix() string {
	if p.Total <= 1 {
		return ""
	}
	return fmt.Sprintf(".part-%04d-of-%04d", p.Index, p.Total)
}

// Envelope writes the part's export envelope: the snapshot's, with
// partIndex and partTotal when there are several parts.
func (p *Part) Envelope(cluster string) []byte {
	if p.Total <= 1 {
		return p.Snapshot.Envelope(cluster)
	}
	return p.envelope(cluster, p.Index, p.Total)
}

// ItemTooLargeError is a row whose envelope alone exceeds the ceiling: no
// partitioning can export it.
type ItemTooLargeError struct {
	Key     Key
	Size    int64 // the envelope holding only this row
	Ceiling int64
}

func (e *ItemTooLargeError) Error() string {
	return fmt.Sprintf("single item export envelope exceeds maxExportBytes (%d): row %s makes a %d-byte envelope; raise maxExportBytes or leave large fields out of the profile",
		e.Ceiling, e.Key, e.Size)
}

// Partition splits s into parts whose envelopes are at most ceiling bytes:
// one part when the whole envelope fits (or ceiling is
// 0); otherwise rows sorted by their JSON text are packed greedily, each
// group measured as if its partIndex and partTotal were the number of
// rows, and each part's rows put back in canonical order. A row that does
// not fit alone is an *ItemTooLargeError.
func Partition(s *Snapshot, ceiling int64) ([]*Part, error) {
	whole := []*Part{{Snapshot: s}}
	if ceiling <= 0 || s.frame(len(s.Rows), 0, 0)+items(s.Rows) <= ceiling {
		return whole, nil
	}
	sorted := slices.Clone(s.Rows)
	var order byJSON
	slices.SortFunc(sorted, order.compare)
	worst := len(s.Rows)
	var (
		groups [][]*Row
		start  int
		size   int64 // the current group's items and the commas between them
	)
	for i, r := range sorted {
		n := int64(r.Size())
		if alone := s.frame(1, worst, worst) + n; alone > ceiling {
			return nil, &ItemTooLargeError{Key: r.Key(), Size: alone, Ceiling: ceiling}
		}
		if i > start && s.frame(i-start+1, worst, worst)+size+1+n > ceiling {
			groups = append(groups, sorted[start:i])
			start, size = i, 0
		}
		if i > start {
			size++
		}
		size += n
	}
	groups = append(groups, sorted[start:])
	if len(groups) == 1 {
		return whole, nil
	}
	parts := make([]*Part, len(groups))
	for i, g := range groups {
		rs := slices.Clone(g)
		Sort(rs)
		parts[i] = &Part{Snapshot: &Snapshot{Inventory: s.Inventory, Rows: rs, Checksum: Checksum(rs), ExportedAt: s.ExportedAt, ordered: true},
			Index: i + 1, Total: len(groups)}
	}
	return parts, nil
}

// Oversized lists those of rs (rows of s) whose envelope alone, in an
// export of s, exceeds ceiling: the rows no partition can export
// (Partition's measure), for sinks that write rows one by one. Nil when
// ceiling is 0.
func (s *Snapshot) Oversized(rs []*Row, ceiling int64) []*ItemTooLargeError {
	if ceiling <= 0 {
		return nil
	}
	frame := s.frame(1, len(s.Rows), len(s.Rows))
	var out []*ItemTooLargeError
	for _, r := range rs {
		if alone := frame + int64(r.Size()); alone > ceiling {
			out = append(out, &ItemTooLargeError{Key: r.Key(), Size: alone, Ceiling: ceiling})
		}
	}
	return out
}

// Without is s less the rows whose keys are in drop, in the same order,
// with its own checksum.
func (s *Snapshot) Without(drop map[Key]bool) *Snapshot {
	kept := make([]*Row, 0, len(s.Rows))
	for _, r := range s.Rows {
		if !drop[r.Key()] {
			kept = append(kept, r)
		}
	}
	return &Snapshot{Inventory: s.Inventory, Rows: kept, Checksum: Checksum(kept), ExportedAt: s.ExportedAt, ordered: true}
}

// items is the size of rows in an envelope: their JSON and the commas.
func items(rs []*Row) int64 {
	n := int64(max(len(rs)-1, 0))
	for _, r := range rs {
		n += int64(r.Size())
	}
	return n
}

// frame is the size of an envelope of n rows of s, less their items: what
// Envelope writes around them, with the given part markers (0: none).
func (s *Snapshot) frame(n, index, total int) int64 {
	size := len(`{"schemaVersion":"`+SchemaVersion+`","checksum":"`) + 64 + 1 // 64 hex digits
	if s.Inventory.Generation != 0 {
		size += len(`,"generation":`) + len(strconv.FormatInt(s.Inventory.Generation, 10))
	}
	if total > 0 {
		size += len(`,"partIndex":`) + len(strconv.Itoa(index)) + len(`,"partTotal":`) + len(strconv.Itoa(total))
	}
	size += len(`,"itemCount":`) + len(strconv.Itoa(n))
	size += len(`,"exportedAt":"`) + len(s.ExportedAt.Format(time.RFC3339Nano)) + 1
	size += len(`,"items":[`) + len("]}")
	return int64(size)
}
