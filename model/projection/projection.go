// Package projection describes the part of an object that collection
// reads, so the informer cache keeps that part and drops the rest: rows,
// not objects, are what the operator holds.
//
// A Set is a tree of field names. A leaf keeps its whole subtree; the
// zero-field Set built by All keeps the whole object. Sets only grow
// (Add, Merge): a field read by any expression is kept.
package projection

import (
	"sort"
	"strings"
)

// Set is a tree of kept fields. The nil *Set keeps nothing.
type Set struct {
	all    bool
	fields map[string]*Set
}

// All keeps the whole object.
func All() *Set { return &Set{all: true} }

// Of builds a set from paths; each path keeps its subtree, and an empty path
// keeps everything.
func Of(paths ...[]string) *Set {
	s := &Set{}
	for _, p := range paths {
		s.Add(p...)
	}
	return s
}

// Base is what every row and every selection reads: identity and metadata
// used by selection (labels, annotations), plus apiVersion and kind.
func Base() *Set {
	s := &Set{}
	s.Add("apiVersion")
	s.Add("kind")
	for _, f := range []string{"name", "namespace", "uid", "labels", "annotations", "resourceVersion"} {
		s.Add("metadata", f)
	}
	return s
}

// Add keeps the subtree at path.
func (s *Set) Add(path ...string) {
	cur := s
	for _, f := range path {
		if cur.all {
			return
		}
		if cur.fields == nil {
			cur.fields = map[string]*Set{}
		}
		next := cur.fields[f]
		if next == nil {
			next = &Set{}
			cur.fields[f] = next
		}
		cur = next
	}
	cur.all, cur.fields = true, nil
}

// Merge adds every path of o to s.
func (s *Set) Merge(o *Set) {
	if o == nil || s.all {
		return
	}
	if o.all {
		s.all, s.fields = true, nil
		return
	}
	for f, sub := range o.fields {
		if s.fields == nil {
			s.fields = map[string]*Set{}
		}
		if s.fields[f] == nil {
			s.fields[f] = &Set{}
		}
		s.fields[f].Merge(sub)
	}
}

// Covers reports whether s keeps everything o keeps.
func (s *Set) Covers(o *Set) bool {
	switch {
	case o == nil || len(o.fields) == 0 && !o.all:
		return true
	case s == nil:
		return false
	case s.all:
		return true
	case o.all:
		return false
	}
	for f, sub := range o.fields {
		if !s.fields[f].Covers(sub) {
			return false
		}
	}
	return true
}

// Prune reduces obj to s in place and returns it: fields s does not keep
// are deleted, so no map is copied. A kept field that is not a map when s
// descends into it is kept whole (a list, or a scalar, is not split).
func (s *Set) Prune(obj map[string]any) map[string]any {
	if s == nil {
		clear(obj)
		return obj
	}
	if s.all {
		return obj
	}
	for f, v := range obj {
		sub, kept := s.fields[f]
		if !kept {
			delete(obj, f)
			continue
		}
		if m, isMap := v.(map[string]any); isMap && !sub.all {
			sub.Prune(m)
		}
	}
	return obj
}

// String lists the kept paths, sorted ("*" for everything).
func (s *Set) String() string {
	if s == nil {
		return ""
	}
	var paths []string
	var walk func(prefix string, n *Set)
	walk = func(prefix string, n *Set) {
		if n.all {
			if prefix == "" {
				prefix = "*"
			}
			paths = append(paths, prefix)
			return
		}
		for f, sub := range n.fields {
			p := f
			if prefix != "" {
				p = prefix + "." + f
			}
			walk(p, sub)
		}
	}
	walk("", s)
	sort.Strings(paths)
	return strings.Join(paths, ",")
}
