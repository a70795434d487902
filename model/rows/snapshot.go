package rows

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Identity names the inventory a snapshot belongs to.
type Identity struct {
	Namespace  string
	Name       string
	Generation int64
}

// Snapshot is an immutable, canonically ordered set of rows with its
// checksum. It is shared between actors and sinks; nobody may modify it.
type Snapshot struct {
	Inventory  Identity
	Rows       []*Row
	Checksum   string
	ExportedAt time.Time
	// Keep names the targets (by name) whose rows the backend leaves as it
	// holds them, neither rewritten nor deleted: targets that have not
	// listed their objects since the manager started (one denied by a
	// scope, a profile typo), whose rows nobody has observed. Rows holds
	// none of their rows. Empty for a complete snapshot.
	Keep []string

	ordered bool // built here: Rows are in canonical order (Diff walks them)
}

// NewSnapshot orders rows canonically and computes the checksum. It takes
// ownership of rows.
func NewSnapshot(id Identity, rs []*Row, at time.Time) *Snapshot {
	if !slices.IsSortedFunc(rs, Compare) { // callers that keep rows in order pay one pass
		Sort(rs)
	}
	return &Snapshot{Inventory: id, Rows: rs, Checksum: Checksum(rs), ExportedAt: at.UTC(), ordered: true}
}

// Keeping returns a copy of s that keeps the rows of targets (see Keep);
// nil or none returns s.
func (s *Snapshot) Keeping(targets []string) *Snapshot {
	if len(targets) == 0 {
		return s
	}
	c := *s
	c.Keep = slices.Clone(targets)
	slices.Sort(c.Keep)
	c.Keep = slices.Compact(c.Keep)
	return &c
}

// Keeps reports whether the backend leaves the rows of the target named
// targetName as it holds them. Only the name is compared: a KollectTarget
// and a KollectClusterTarget of one name are both kept, which keeps a row
// for longer, never deletes one.
func (s *Snapshot) Keeps(targetName string) bool {
	return len(s.Keep) > 0 && slices.Contains(s.Keep, targetName)
}

// Partial reports whether s keeps some targets' rows as the backend holds
// them: the backend holds more than Rows.
func (s *Snapshot) Partial() bool { return len(s.Keep) > 0 }

// Ordered reports whether Rows are known to be in canonical order: the
// snapshot was built by NewSnapshot (or is a part of one), not by hand.
func (s *Snapshot) Ordered() bool { return s.ordered }

// Compare orders rows canonically; it equals comparing SortKey values
// without building them.
func Compare(a, b *Row) int {
	same := a.Origin == b.Origin // rows of one target and kind: the usual case
	if !same {
		if c := strings.Compare(a.TargetNamespace, b.TargetNamespace); c != 0 {
			return c
		}
		if c := strings.Compare(a.TargetName, b.TargetName); c != 0 {
			return c
		}
	}
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	if c := strings.Compare(a.UID, b.UID); c != 0 || same {
		return c
	}
	if c := strings.Compare(a.Group, b.Group); c != 0 {
		return c
	}
	if c := strings.Compare(a.Version, b.Version); c != 0 {
		return c
	}
	return strings.Compare(a.Kind, b.Kind)
}

// ChecksumShort is the first 12 hex characters of the checksum.
func (s *Snapshot) ChecksumShort() string {
	if len(s.Checksum) < 12 {
		return s.Checksum
	}
	return s.Checksum[:12]
}

// Envelope writes the snapshot as the compact export envelope, byte for
// byte as upstream writes it. cluster is set only by the
// pipeline CLI.
func (s *Snapshot) Envelope(cluster string) []byte { return s.envelope(cluster, 0, 0) }

// envelope writes the envelope with part markers (0: none).
func (s *Snapshot) envelope(cluster string, index, total int) []byte {
	b := make([]byte, 0, s.frame(len(s.Rows), index, total)+items(s.Rows)+int64(len(cluster))+16)
	b = append(b, `{"schemaVersion":"`+SchemaVersion+`","checksum":"`+s.Checksum+`"`...)
	if s.Inventory.Generation != 0 {
		b = append(b, `,"generation":`...)
		b = strconv.AppendInt(b, s.Inventory.Generation, 10)
	}
	if total > 0 {
		b = append(b, `,"partIndex":`...)
		b = strconv.AppendInt(b, int64(index), 10)
		b = append(b, `,"partTotal":`...)
		b = strconv.AppendInt(b, int64(total), 10)
	}
	b = append(b, `,"itemCount":`...)
	b = strconv.AppendInt(b, int64(len(s.Rows)), 10)
	b = append(b, `,"exportedAt":"`...)
	b = s.ExportedAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if cluster != "" {
		b = append(b, `,"cluster":`...)
		b = appendString(b, cluster)
	}
	b = append(b, `,"items":[`...)
	var w jsonWriter
	for i, r := range s.Rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = w.append(b, r)
	}
	return append(b, "]}"...)
}
