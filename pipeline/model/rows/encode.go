package rows

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"unicode/utf8"
)

// encode writes r's canonical JSON: exactly what encoding/json writes for
// the struct (compact, attribute keys sorted, HTML characters escaped),
// without reflection for the common values (strings, integers, booleans,
// null). Anything else goes through encoding/json.
func encode(r *Row) ([]byte, error) {
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
	b = append(b, `,"namespace":`...)
	b = appendString(b, r.Namespace)
	b = append(b, `,"name":`...)
	b = appendString(b, r.Name)
	if r.Group != "" {
		b = append(b, `,"group":`...)
		b = appendString(b, r.Group)
	}
	b = append(b, `,"version":`...)
	b = appendString(b, r.Version)
	b = append(b, `,"kind":`...)
	b = appendString(b, r.Kind)
	b = append(b, `,"uid":`...)
	b = appendString(b, r.UID)
	b = append(b, `,"attributes":`...)
	if r.Attributes == nil {
		b = append(b, "null"...)
	} else {
		var err error
		if b, err = appendAttributes(b, r.Attributes); err != nil {
			return nil, err
		}
	}
	b = append(b, '}')
	return bytes.Clone(b), nil
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
