package rows

import (
	"encoding/json"
	"strconv"
	"sync"
	"unicode/utf8"
)

// spans are where a row's own JSON holds the characters of its
// per-object strings (namespace, name, uid) as they are, or -1 for a
// string that was escaped.
type spans struct{ namespace, name, uid int }

// A row's canonical JSON is exactly what encoding/json writes for
// upstream's flat row struct (compact, attribute keys sorted, HTML
// characters escaped):
//
//	{"targetNamespace":…,"targetName":…,   the Origin's head
//	"namespace":…,"name":…                 the row's own
//	,"group":…,"version":…,"kind":…        the Origin's middle
//	,"uid":…,"attributes":{…}}             the row's own
//
// A row keeps only its own two pieces, one string; the Origin's pieces,
// the same for every row of a target and kind, are written when the JSON
// is. Each piece ends at the end of a JSON string or a structural
// character, so no piece of one row's JSON is a proper prefix of the same
// piece of another's: comparing JSON texts of rows with one Origin is
// comparing their own strings.

// encode writes r's own JSON (see above), without reflection for the
// common values (strings, integers, booleans, null). Anything else goes
// through encoding/json.
func encode(r *Row, attrs Attributes) (string, spans, error) {
	// Built in a pooled scratch buffer and copied out at its exact size:
	// rows live as long as their objects, so spare capacity would be kept.
	scratch := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(scratch)
	b := (*scratch)[:0]
	defer func() { *scratch = b[:0] }()
	var at spans
	b = append(b, `"namespace":`...)
	b, at.namespace = appendSpan(b, r.Namespace)
	b = append(b, `,"name":`...)
	b, at.name = appendSpan(b, r.Name)
	b = append(b, `,"uid":`...)
	b, at.uid = appendSpan(b, r.UID)
	b = append(b, `,"attributes":`...)
	if attrs == nil {
		b = append(b, "null"...)
	} else {
		var err error
		if b, err = appendAttributes(b, attrs); err != nil {
			return "", spans{}, err
		}
	}
	b = append(b, '}')
	return string(b), at, nil
}

// appendHead appends the Origin's head: {"targetNamespace":…,"targetName":…,
func (o *Origin) appendHead(b []byte) []byte {
	b = append(b, `{"targetNamespace":`...)
	b = appendString(b, o.TargetNamespace)
	b = append(b, `,"targetName":`...)
	b = appendString(b, o.TargetName)
	return append(b, ',')
}

// appendMiddle appends the Origin's middle: ,"group":…,"version":…,"kind":…
func (o *Origin) appendMiddle(b []byte) []byte {
	if o.Group != "" {
		b = append(b, `,"group":`...)
		b = appendString(b, o.Group)
	}
	b = append(b, `,"version":`...)
	b = appendString(b, o.Version)
	b = append(b, `,"kind":`...)
	return appendString(b, o.Kind)
}

// size is the length of the Origin's head and middle.
func (o *Origin) size() int {
	n := len(`{"targetNamespace":,"targetName":,`) + quotedLen(o.TargetNamespace) + quotedLen(o.TargetName)
	if o.Group != "" {
		n += len(`,"group":`) + quotedLen(o.Group)
	}
	return n + len(`,"version":,"kind":`) + quotedLen(o.Version) + quotedLen(o.Kind)
}

// split is where a row's own JSON leaves off for the Origin's middle: the
// end of the quoted name.
func split(own string) int {
	i := skipString(own, len(`"namespace":`))
	return skipString(own, i+len(`,"name":`))
}

// attributesAt is where a row's own JSON holds its attributes' value.
func attributesAt(own string) int {
	i := skipString(own, split(own)+len(`,"uid":`))
	return i + len(`,"attributes":`)
}

// skipString returns the index just past the JSON string that starts at
// s[i]. Every escape is a backslash and one character (\", \\, \n,
// \u…), so the first quote not escaped ends it.
func skipString(s string, i int) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(s)
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
	if !plain(s) {
		j, _ := json.Marshal(s) // a string always encodes
		return append(b, j...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// quotedLen is the length of s quoted as appendString quotes it.
func quotedLen(s string) int {
	if !plain(s) {
		j, _ := json.Marshal(s)
		return len(j)
	}
	return len(s) + 2
}

// plain reports whether encoding/json writes s between quotes as it is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
