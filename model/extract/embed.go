package extract

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// Embed is the compiled `spec.export` of a profile in Resource mode: a
// pruned, scrubbed copy of the object stored under attribute As.
type Embed struct {
	As             string
	Include        string // MetadataOnly SpecOnly StatusOnly SpecAndStatus All
	DedupeIdentity bool
	PruneDefaults  bool
	pointers       [][]string
	paths          [][]string
}

var defaultPrunes = [][]string{
	{"metadata", "managedFields"}, {"metadata", "resourceVersion"}, {"metadata", "generation"},
	{"metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"},
	{"metadata", "annotations", "argocd.argoproj.io/tracking-id"},
}

// NewEmbed compiles the prune lists. The error names the bad entry.
func NewEmbed(as, include string, dedupeIdentity, pruneDefaults bool, jsonPointers, jsonPaths []string) (*Embed, error) {
	if as == "" {
		as = "resource"
	}
	if include == "" {
		include = "SpecAndStatus"
	}
	e := &Embed{As: as, Include: include, DedupeIdentity: dedupeIdentity, PruneDefaults: pruneDefaults}
	for i, p := range jsonPointers {
		toks, err := parsePointer(p)
		if err != nil {
			return nil, fmt.Errorf("export.prune.jsonPointers[%d]: %w", i, err)
		}
		e.pointers = append(e.pointers, toks)
	}
	for _, p := range jsonPaths {
		if toks, ok := parseSimplePath(p); ok {
			e.paths = append(e.paths, toks)
		} // paths with wildcards or filters are ignored, as upstream does
	}
	return e, nil
}

func parsePointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q is not an RFC 6901 pointer (it must start with /)", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(s, "~0", ""), "~1", ""), "~") {
			return nil, fmt.Errorf("%q uses ~ other than ~0 or ~1", p)
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

var pathToken = regexp.MustCompile(`\.([A-Za-z0-9_\-]+)|\['([^']*)'\]|\["([^"]*)"\]|\[([0-9]+)\]`)

func parseSimplePath(p string) ([]string, bool) {
	p = strings.TrimPrefix(strings.TrimSpace(p), "$")
	if strings.Contains(p, "[*]") || strings.Contains(p, "?(") || p == "" {
		return nil, false
	}
	var toks []string
	rest := p
	for rest != "" {
		m := pathToken.FindStringSubmatchIndex(rest)
		if m == nil || m[0] != 0 {
			return nil, false
		}
		sub := pathToken.FindStringSubmatch(rest)
		for _, g := range sub[1:] {
			if g != "" {
				toks = append(toks, g)
				break
			}
		}
		rest = rest[m[1]:]
	}
	return toks, len(toks) > 0
}

// Apply returns the pruned copy of obj.
func (e *Embed) Apply(obj map[string]any, scrub *Scrubber) any {
	out := map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"]}
	keep := func(k string) {
		if v, ok := obj[k]; ok {
			out[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	switch e.Include {
	case "All":
		out = runtime.DeepCopyJSON(obj)
	case "MetadataOnly":
		keep("metadata")
	case "SpecOnly":
		keep("spec")
	case "StatusOnly":
		keep("status")
	default:
		keep("spec")
		keep("status")
	}
	if md, ok := out["metadata"].(map[string]any); ok && e.DedupeIdentity {
		delete(md, "name")
		delete(md, "namespace")
		delete(md, "uid")
	}
	if e.PruneDefaults {
		for _, p := range defaultPrunes {
			remove(out, p)
		}
	}
	for _, p := range e.pointers {
		remove(out, p)
	}
	for _, p := range e.paths {
		remove(out, p)
	}
	if md, ok := out["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok && len(ann) == 0 {
			delete(md, "annotations")
		}
	}
	if scrub != nil {
		return scrub.Value(out)
	}
	return out
}

// remove deletes the value at path; a list element becomes null.
func remove(v any, path []string) {
	for i, tok := range path {
		last := i == len(path)-1
		switch cur := v.(type) {
		case map[string]any:
			if last {
				delete(cur, tok)
				return
			}
			v = cur[tok]
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(cur) {
				return
			}
			if last {
				cur[n] = nil
				return
			}
			v = cur[n]
		default:
			return
		}
	}
}
