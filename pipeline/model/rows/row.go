package rows

import (
	"fmt"
	"slices"
	"strings"
	"unsafe"
)

// SchemaVersion is written into every envelope.
const SchemaVersion = "kollect.dev/v1alpha1"

// Row is one collected object as seen through a profile. Its JSON (JSON,
// MarshalJSON) keeps upstream's field order: targetNamespace, targetName,
// namespace, name, group, version, kind, uid, attributes.
type Row struct {
	// Origin holds the five strings a row shares with the other rows of its
	// target and kind (its fields read as the row's own: r.Kind); rows
	// built by one evaluator point to one Origin, so a row costs a pointer
	// instead of five strings (80 bytes).
	*Origin
	Namespace  string     `json:"namespace"`
	Name       string     `json:"name"`
	UID        string     `json:"uid"`
	Attributes Attributes `json:"attributes"`

	raw string // the canonical JSON
}

// Origin is what a row shares with every row of its target and kind: the
// target that collected it and the kind it was read as. Nobody may modify
// an Origin a row points to.
type Origin struct {
	TargetNamespace string `json:"targetNamespace"`
	TargetName      string `json:"targetName"`
	Group           string `json:"group,omitempty"`
	Version         string `json:"version"`
	Kind            string `json:"kind"`
}

// New builds a row and encodes its canonical JSON. Attributes may be nil
// (none); out of name order they are sorted, and a name given twice keeps
// its last value.
func New(r Row) (*Row, error) {
	if r.Origin == nil {
		r.Origin = &Origin{}
	}
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
// keys sorted). Callers must not modify it: it is the row's own memory.
func (r *Row) JSON() []byte { return unsafe.Slice(unsafe.StringData(r.raw), len(r.raw)) }

// MarshalJSON writes the canonical JSON, encoding a row New did not build.
func (r Row) MarshalJSON() ([]byte, error) {
	if r.raw != "" {
		return []byte(r.raw), nil
	}
	if r.Origin == nil {
		r.Origin = &Origin{}
	}
	raw, _, err := encode(&r)
	return []byte(raw), err
}

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
	return r == o || (r != nil && o != nil && r.raw == o.raw)
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
