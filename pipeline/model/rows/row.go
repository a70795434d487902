package rows

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// SchemaVersion is written into every envelope.
const SchemaVersion = "kollect.dev/v1alpha1"

// Row is one collected object as seen through a profile. Field order is the
// upstream JSON order.
type Row struct {
	TargetNamespace string     `json:"targetNamespace"`
	TargetName      string     `json:"targetName"`
	Namespace       string     `json:"namespace"`
	Name            string     `json:"name"`
	Group           string     `json:"group,omitempty"`
	Version         string     `json:"version"`
	Kind            string     `json:"kind"`
	UID             string     `json:"uid"`
	Attributes      Attributes `json:"attributes"`

	raw []byte
}

// New builds a row and encodes its canonical JSON. Attributes may be nil
// (none); out of name order they are sorted, and a name given twice keeps
// its last value.
func New(r Row) (*Row, error) {
	if r.Attributes == nil {
		r.Attributes = Attributes{}
	}
	if !r.Attributes.Sorted() {
		r.Attributes = normalize(r.Attributes)
	}
	raw, at, err := encode(&r)
	if err != nil {
		return nil, fmt.Errorf("encode row %s/%s: %w", r.Namespace, r.Name, err)
	}
	// The object's own strings are read from the JSON, which holds them
	// anyway: the row does not keep the decoded object's copies (80 bytes
	// a row, most of it the UID).
	r.Namespace, r.Name, r.UID = within(raw, at.namespace, r.Namespace), within(raw, at.name, r.Name), within(raw, at.uid, r.UID)
	r.raw = raw
	return &r, nil
}

// JSON is the row's canonical compact JSON (Go encoding/json output, map
// keys sorted). Callers must not modify it.
func (r *Row) JSON() []byte { return r.raw }

// Key identifies a row inside an inventory: the target and the object's
// UID.
func (r *Row) Key() Key {
	return Key{TargetNamespace: r.TargetNamespace, TargetName: r.TargetName, UID: r.UID}
}

// SortKey is the canonical order key: targetNamespace, targetName,
// namespace, name, uid, group, version, kind joined by NUL bytes.
func (r *Row) SortKey() string {
	return strings.Join([]string{r.TargetNamespace, r.TargetName, r.Namespace, r.Name, r.UID, r.Group, r.Version, r.Kind}, "\x00")
}

// Equal reports whether two rows have the same content.
func (r *Row) Equal(o *Row) bool {
	return r == o || (r != nil && o != nil && bytes.Equal(r.raw, o.raw))
}

// Key identifies a row: the target that collected it and the object's UID.
type Key struct {
	TargetNamespace string
	TargetName      string
	UID             string
}

func (k Key) String() string { return k.TargetNamespace + "/" + k.TargetName + "/" + k.UID }

// normalize returns as sorted by name with each name once (its last value),
// in a new slice.
func normalize(as Attributes) Attributes {
	sorted := slices.Clone(as)
	slices.SortStableFunc(sorted, byName)
	out := sorted[:0]
	for i, a := range sorted {
		if i+1 < len(sorted) && sorted[i+1].Name == a.Name {
			continue // a later value of the same name wins
		}
		out = append(out, a)
	}
	return out
}
