package rows

import (
	"encoding/json"
	"strconv"
	"sync"
	"unicode/utf8"
)

// spans are where the JSON holds the characters of a row's per-object
// strings (namespace, name, uid) as they are, or -1 for a string that was
// escaped.
type spans struct{ namespace, name, uid int }

// encode writes r's canonical JSON: exactly what encoding/json writes for
// the struct (compact, attribute keys sorted, HTML characters escaped),
// without reflection for the common values (strings, integers, booleans,
// null). Anything else goes through encoding/json.
func encode(r *Row) (string, spans, error) {
	// Built in a pooled scratch buffer and copied out at its exact size:
	// rows live as long as their objects, so spare capacity would be kept.
	scratch := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(scratch)
	b := (*scratch)[:0]
	defer func() { *scratch = b[:0] }()
	b = append(b, `{"targetNamespace":`...)
	b = appendString(b, r.TargetNamespace)
	b = append(b, `,"targetName":`...)
	b = appendString(b, r.TargetName)
	var at spans
	b = append(b, `,"namespace":`...)
	b, at.namespace = appendSpan(b, r.Namespace)
	b = append(b, `,"name":`...)
	b, at.name = appendSpan(b, r.Name)
	if r.Group != "" {
		b = append(b, `,"group":`...)
		b = appendString(b, r.Group)
	}
	b = append(b, `,"version":`...)
	b = appendString(b, r.Version)
	b = append(b, `,"kind":`...)
	b = appendString(b, r.Kind)
	b = append(b, `,"uid":`...)
	b, at.uid = appendSpan(b, r.UID)
	b = append(b, `,"attributes":`...)
	if r.Attributes == nil {
		b = append(b, "null"...)
	} else {
		var err error
		if b, err = appendAttributes(b, r.Attributes); err != nil {
			return "", spans{}, err
		}
	}
	b = append(b, '}')
	return string(b), at, nil
}

// appendSpan appends s quoted and returns where its characters start in
// b, or -1 when they were escaped.
func appendSpan(b []byte, s string) ([]byte, int) {
	at := len(b) + 1
	b = appendString(b, s)
	if len(b) != at+len(s)+1 || string(b[at:at+len(s)]) != s {
		return b, -1
	}
	return b, at
}

// within returns s as the span of raw at which it was written: the same
// characters, kept by raw instead of a string of their own.
func within(raw string, at int, s string) string {
	if at < 0 || s == "" {
		return s
	}
	return raw[at : at+len(s)]
}

var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}

// appendString quotes s as encoding/json does; strings that need no
// escaping (the usual names, UIDs and versions) are copied as they are.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s) // a string always encodes
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
