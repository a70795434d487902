package rows

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// Attribute is one named value of a row.
type Attribute struct {
	Name  string
	Value any
}

// Attributes are a row's values in name order (byte order, as encoding/json
// sorts map keys), each name once. A row holds them as one slice rather
// than a map: one allocation and a third of the memory for a profile's
// handful of attributes, and the canonical JSON needs no sorting. They
// encode to and decode from a JSON object.
type Attributes []Attribute

// AttributesOf builds attributes from a map (tests, and values decoded as
// maps); nil gives nil.
func AttributesOf(m map[string]any) Attributes {
	if m == nil {
		return nil
	}
	out := make(Attributes, 0, len(m))
	for k, v := range m {
		out = append(out, Attribute{Name: k, Value: v})
	}
	slices.SortFunc(out, byName)
	return out
}

func byName(a, b Attribute) int { return cmp.Compare(a.Name, b.Name) }

// search finds name's place in as.
func (as Attributes) search(name string) (int, bool) {
	return slices.BinarySearchFunc(as, name, func(a Attribute, n string) int { return cmp.Compare(a.Name, n) })
}

// Lookup returns the value named name, and whether the row has it.
func (as Attributes) Lookup(name string) (any, bool) {
	if i, ok := as.search(name); ok {
		return as[i].Value, true
	}
	return nil, false
}

// With sets a, in its place by name (replacing a value of the same name);
// it may reuse as's array, as append does.
func (as Attributes) With(a Attribute) Attributes {
	i, ok := as.search(a.Name)
	if ok {
		as[i] = a
		return as
	}
	return slices.Insert(as, i, a)
}

// Get returns the value named name; nil when the row has none (or it is
// null).
func (as Attributes) Get(name string) any {
	v, _ := as.Lookup(name)
	return v
}

// Sorted reports whether as is in name order with each name once.
func (as Attributes) Sorted() bool {
	for i := 1; i < len(as); i++ {
		if as[i-1].Name >= as[i].Name {
			return false
		}
	}
	return true
}

// MarshalJSON writes the attributes as a JSON object, exactly as
// encoding/json writes the same map; nil is null.
func (as Attributes) MarshalJSON() ([]byte, error) {
	if as == nil {
		return []byte("null"), nil
	}
	return appendAttributes(nil, as)
}

// UnmarshalJSON reads a JSON object (null gives nil).
func (as *Attributes) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*as = nil
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("attributes: %w", err)
	}
	*as = AttributesOf(m)
	return nil
}

// decodeAttributes reads a JSON object written by appendAttributes (null
// gives nil), its keys in order: numbers that are integers as int64,
// others as float64, as a Kubernetes object's values decode.
func decodeAttributes(b []byte) (Attributes, error) {
	if string(b) == "null" || len(b) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if _, err := d.Token(); err != nil { // {
		return nil, fmt.Errorf("attributes: %w", err)
	}
	out := Attributes{}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("attributes: %w", err)
		}
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("attributes: %w", err)
		}
		out = append(out, Attribute{Name: k.(string), Value: numbers(v)})
	}
	return out, nil
}

// numbers replaces the json.Number values in v by int64 or float64.
func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(string(v), 64) // encoding/json wrote it from a float64
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	}
	return v
}

// appendAttributes writes as as a JSON object; as must be in name order.
func appendAttributes(b []byte, as Attributes) ([]byte, error) {
	b = append(b, '{')
	for i, a := range as {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, a.Name)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, a.Value); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}
