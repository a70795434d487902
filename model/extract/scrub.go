package extract

import (
	"reflect"
	"strings"
)

var builtinScrubKeys = []string{"password", "passwd", "secret", "token", "apikey", "api_key", "privatekey",
	"private_key", "credential", "auth", "clientsecret", "connectionstring"}

// Scrubber redacts values under sensitive map keys.
type Scrubber struct{ keys map[string]bool }

// NewScrubber builds a scrubber from the built-in keys plus extra ones.
func NewScrubber(extra ...string) *Scrubber {
	s := &Scrubber{keys: map[string]bool{}}
	for _, k := range append(append([]string(nil), builtinScrubKeys...), extra...) {
		if k = strings.ToLower(strings.TrimSpace(k)); k != "" {
			s.keys[k] = true
		}
	}
	return s
}

func redacted() map[string]any { return map[string]any{"redacted": true, "reason": "sensitive-key"} }

// Value returns v with every sensitive nested key redacted. v is not
// modified; unchanged subtrees are shared.
func (s *Scrubber) Value(v any) any {
	switch v := v.(type) {
	case map[string]any:
		var out map[string]any
		for k, val := range v {
			var nv any
			if s.sensitive(k, val) {
				nv = redacted()
			} else {
				nv = s.Value(val)
			}
			if out == nil && !same(nv, val) {
				out = make(map[string]any, len(v))
				for k2, v2 := range v {
					out[k2] = v2
				}
			}
			if out != nil {
				out[k] = nv
			}
		}
		if out == nil {
			return v
		}
		return out
	case []any:
		var out []any
		for i, val := range v {
			nv := s.Value(val)
			if out == nil && !same(nv, val) {
				out = append([]any(nil), v...)
			}
			if out != nil {
				out[i] = nv
			}
		}
		if out == nil {
			return v
		}
		return out
	}
	return v
}

func (s *Scrubber) sensitive(key string, val any) bool {
	k := strings.ToLower(strings.TrimSpace(key))
	if s.keys[k] {
		return true
	}
	for sk := range s.keys {
		if len(sk) > 2 && strings.HasSuffix(k, sk) {
			return true
		}
	}
	m, isMap := val.(map[string]any)
	switch k {
	case "valuefrom":
		_, ok := m["secretKeyRef"]
		return isMap && ok
	case "secretkeyref", "secretref":
		return isMap
	case "tls":
		_, ok := m["key"]
		return isMap && ok
	}
	return false
}

// same reports whether a and b are the identical value (pointer identity
// for maps and slices), so unchanged subtrees are not copied.
func same(a, b any) bool {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		return ok && len(av) == len(bv) && (len(av) == 0 || mapPtr(av) == mapPtr(bv))
	case []any:
		bv, ok := b.([]any)
		return ok && len(av) == len(bv) && (len(av) == 0 || &av[0] == &bv[0])
	}
	return true
}

func mapPtr(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }
