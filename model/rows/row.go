package rows

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// SchemaVersion is written into every envelope.
const SchemaVersion = "kollect.dev/v1alpha1"

// Row is one collected object as seen through a profile. Its JSON (JSON,
// MarshalJSON) keeps upstream's field order: targetNamespace, targetName,
// namespace, name, group, version, kind, uid, attributes. A row keeps its
// attributes only in its JSON (Attributes decodes them): a slice of
// boxed values beside it was about 70 bytes a row.
type Row struct {
	// Origin holds the five strings a row shares with the other rows of its
	// target and kind (its fields read as the row's own: r.Kind); rows
	// built by one evaluator point to one Origin, so a row costs a pointer
	// instead of five strings (80 bytes).
	*Origin
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`

	raw string // the row's own part of its canonical JSON (encode.go)
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

// same reports whether o and p hold the same strings.
func (o *Origin) same(p *Origin) bool {
	return o == p || (o != nil && p != nil && *o == *p)
}

// New builds a row with attrs and encodes its canonical JSON. attrs may
// be nil (none); out of name order they are sorted, and a name given twice
// keeps its last value.
func New(r Row, attrs Attributes) (*Row, error) {
	if r.Origin == nil {
		r.Origin = &Origin{}
	}
	if attrs == nil {
		attrs = Attributes{}
	}
	if !attrs.Sorted() {
		attrs = normalize(attrs)
	}
	raw, at, err := encode(&r, attrs)
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

// AppendJSON appends the row's canonical compact JSON (Go encoding/json
// output of upstream's row, map keys sorted) to b. A row New did not
// build appends nothing.
func (r *Row) AppendJSON(b []byte) []byte {
	if r.raw == "" {
		return b
	}
	m := split(r.raw)
	b = r.Origin.appendHead(b)
	b = append(b, r.raw[:m]...)
	b = r.Origin.appendMiddle(b)
	return append(b, r.raw[m:]...)
}

// jsonWriter appends rows' JSON, encoding an Origin's pieces once for a
// run of rows that share it.
type jsonWriter struct {
	origin       *Origin
	head, middle []byte
}

func (w *jsonWriter) append(b []byte, r *Row) []byte {
	if r.raw == "" {
		return b
	}
	if r.Origin != w.origin {
		w.origin, w.head, w.middle = r.Origin, r.Origin.appendHead(w.head[:0]), r.Origin.appendMiddle(w.middle[:0])
	}
	m := split(r.raw)
	b = append(b, w.head...)
	b = append(b, r.raw[:m]...)
	b = append(b, w.middle...)
	return append(b, r.raw[m:]...)
}

// JSON is the row's canonical JSON in a new slice; loops over rows
// append to one buffer with AppendJSON instead.
func (r *Row) JSON() []byte {
	if r.raw == "" {
		return nil
	}
	return r.AppendJSON(make([]byte, 0, r.Size()))
}

// Size is the length of the row's canonical JSON.
func (r *Row) Size() int {
	if r.raw == "" {
		return 0
	}
	return r.Origin.size() + len(r.raw)
}

// Attributes decodes the row's attributes from its JSON: numbers that are
// integers as int64, others as float64, objects as map[string]any, as a
// Kubernetes object's values decode. A row New did not build has none.
func (r *Row) Attributes() Attributes {
	as, err := decodeAttributes([]byte(r.AttributesJSON()))
	if err != nil { // New wrote the JSON: it always decodes
		panic(fmt.Sprintf("rows: a row's own JSON does not decode: %v", err))
	}
	return as
}

// AttributesJSON is the row's attributes as its JSON holds them: a JSON
// object, keys sorted ("" for a row New did not build). It is part of the
// row's own string: reading it allocates nothing.
func (r *Row) AttributesJSON() string {
	if r.raw == "" {
		return ""
	}
	return r.raw[attributesAt(r.raw) : len(r.raw)-1]
}

// MarshalJSON writes the canonical JSON, encoding a row New did not build
// (its attributes null).
func (r Row) MarshalJSON() ([]byte, error) {
	if r.Origin == nil {
		r.Origin = &Origin{}
	}
	if r.raw == "" {
		raw, _, err := encode(&r, nil)
		if err != nil {
			return nil, err
		}
		r.raw = raw
	}
	return r.JSON(), nil
}

// byJSON orders rows by their canonical JSON text, as bytes.Compare of
// their JSON would; rows of one Origin without writing it, others in its
// two buffers.
type byJSON struct{ a, b []byte }

func (o *byJSON) compare(x, y *Row) int {
	if x.Origin.same(y.Origin) {
		return strings.Compare(x.raw, y.raw) // see encode.go
	}
	o.a, o.b = x.AppendJSON(o.a[:0]), y.AppendJSON(o.b[:0])
	return bytes.Compare(o.a, o.b)
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
	return r == o || (r != nil && o != nil && r.raw == o.raw && r.Origin.same(o.Origin))
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
