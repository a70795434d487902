package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// field is an attribute init offers: a JSONPath and a value sampled there.
type field struct {
	path, sample string
}

func (f field) label() string {
	return fmt.Sprintf("%-52s %s", f.path, f.sample)
}

const (
	maxDepth      = 6
	maxCandidates = 200
	maxSample     = 40
)

// plainKey is a map key a dotted JSONPath can name.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// skipped are paths never worth an attribute (bookkeeping of the API
// server) or never offered (Secret data without the confirmation).
func skipped(path string, secret bool) bool {
	switch path {
	case "$.metadata.managedFields", "$.metadata.resourceVersion", "$.metadata.generation", "$.metadata.selfLink",
		"$.metadata.annotations.kubectl.kubernetes.io/last-applied-configuration":
		return true
	}
	if !secret && (strings.HasPrefix(path, "$.data") || strings.HasPrefix(path, "$.stringData")) {
		return true
	}
	return false
}

// candidates walks sampled objects and lists the paths of their values:
// scalars, and maps whose keys a path cannot name one by one (labels,
// annotations) as a whole; a list is sampled by its first element. The
// sample shown is the first object's value at that path.
func candidates(objects []map[string]any, secret bool) []field {
	seen := map[string]string{}
	var walk func(path string, v any, depth int)
	walk = func(path string, v any, depth int) {
		if skipped(path, secret) || len(seen) >= maxCandidates {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			plain := true
			for k := range v {
				keys = append(keys, k)
				plain = plain && plainKey.MatchString(k)
			}
			if (!plain || depth >= maxDepth) && depth > 0 {
				offer(seen, path, v)
				return
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(path+"."+k, v[k], depth+1)
			}
		case []any:
			if len(v) == 0 || depth >= maxDepth {
				offer(seen, path, v)
				return
			}
			walk(path+"[0]", v[0], depth+1)
		default:
			offer(seen, path, v)
		}
	}
	for _, o := range objects {
		walk("$", o, 0)
	}
	out := make([]field, 0, len(seen))
	for p, s := range seen {
		out = append(out, field{path: p, sample: s})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

func offer(seen map[string]string, path string, v any) {
	if _, ok := seen[path]; ok {
		return
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > maxSample {
		s = s[:maxSample-3] + "..."
	}
	seen[path] = s
}

type attribute struct{ name, path string }

// attributeNames names each picked path after its last segment, and
// after more of it where two would share a name: spec.replicas is
// replicas; containers[0].image image, or containersImage beside another
// image.
func attributeNames(paths []string) []attribute {
	segs := make([][]string, len(paths))
	for i, p := range paths {
		for _, s := range strings.FieldsFunc(p, func(r rune) bool { return r == '.' || r == '[' || r == ']' || r == '$' }) {
			if strings.Trim(s, "0123456789") != "" {
				segs[i] = append(segs[i], s)
			}
		}
	}
	depth := make([]int, len(paths))
	for i := range depth {
		depth[i] = 1
	}
	names := make([]string, len(paths))
	for round := 0; round < maxDepth+2; round++ {
		count := map[string]int{}
		for i := range paths {
			names[i] = camel(tail(segs[i], depth[i]))
			count[names[i]]++
		}
		clash := false
		for i := range paths {
			if count[names[i]] > 1 && depth[i] < len(segs[i]) {
				depth[i]++
				clash = true
			}
		}
		if !clash {
			break
		}
	}
	out := make([]attribute, len(paths))
	used := map[string]int{}
	for i, p := range paths {
		n := names[i]
		if used[n]++; used[n] > 1 {
			n = fmt.Sprintf("%s%d", n, used[n])
		}
		out[i] = attribute{name: n, path: p}
	}
	return out
}

func tail(s []string, n int) []string {
	if n > len(s) {
		n = len(s)
	}
	return s[len(s)-n:]
}

// camel joins segments as lowerCamelCase, keeping letters and digits.
func camel(segs []string) string {
	var b strings.Builder
	for i, s := range segs {
		for j, r := range s {
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				continue
			}
			if j == 0 {
				if i == 0 {
					r = unicode.ToLower(r)
				} else {
					r = unicode.ToUpper(r)
				}
			}
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "value"
	}
	return b.String()
}
