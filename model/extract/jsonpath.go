package extract

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"k8s.io/client-go/util/jsonpath"

	"kollect.dev/kollect/model/projection"
)

// compileJSONPath accepts `$.a.b` (rewritten to `{.a.b}`) or a kubectl
// template. Templates made only of field names and non-negative indexes are
// evaluated by a direct walk; everything else goes through client-go.
func compileJSONPath(path string) (evaluator, error) {
	tmpl := path
	if strings.HasPrefix(tmpl, "$.") {
		tmpl = "{" + tmpl[1:] + "}"
	} else if tmpl == "$" {
		tmpl = "{.}"
	}
	p, err := jsonpath.Parse("attribute", tmpl)
	if err != nil {
		return nil, fmt.Errorf("invalid JSONPath %q: %w", path, err)
	}
	if steps, ok := simpleSteps(p.Root); ok {
		return fieldWalk(steps), nil
	}
	// JSONPath has no cost limit of its own (CEL has one): bound it by
	// shape. One recursive descent walks the object once; each further one
	// walks everything below every match of the one before, so the cost
	// grows with the object's size to that power ({..a..b..c} over a large
	// object held a worker for minutes).
	if n := recursiveDescents(p.Root); n > maxRecursiveDescents {
		return nil, fmt.Errorf("invalid JSONPath %q: it descends recursively (..) %d times, at most %d is allowed: "+
			"each one walks every node below the matches of the last, so the cost grows as the object's size to that power; "+
			"name the fields between them, or use a cel: expression (it has a cost limit)", path, n, maxRecursiveDescents)
	}
	if _, err := parseTemplate(tmpl); err != nil {
		return nil, fmt.Errorf("invalid JSONPath %q: %w", path, err)
	}
	t := &templatePath{tmpl: tmpl, needs: templateReads(p.Root)}
	// client-go's JSONPath rewrites its parsed template while it walks a
	// range and does not restore it: such a template is parsed for every
	// evaluation, or only the first object would see it whole.
	t.reparse = hasRange(p.Root)
	return t, nil
}

// maxRecursiveDescents is how many `..` one JSONPath may hold.
const maxRecursiveDescents = 1

// recursiveDescents counts the `..` in a parsed template, filters and
// unions included.
func recursiveDescents(n jsonpath.Node) int {
	count := 0
	switch n := n.(type) {
	case *jsonpath.RecursiveNode:
		count++
	case *jsonpath.ListNode:
		for _, c := range n.Nodes {
			count += recursiveDescents(c)
		}
	case *jsonpath.FilterNode:
		count += recursiveDescents(n.Left) + recursiveDescents(n.Right)
	case *jsonpath.UnionNode:
		for _, c := range n.Nodes {
			count += recursiveDescents(c)
		}
	}
	return count
}

// hasRange reports whether a template uses {range}.
func hasRange(n jsonpath.Node) bool {
	switch n := n.(type) {
	case *jsonpath.ListNode:
		for _, c := range n.Nodes {
			if hasRange(c) {
				return true
			}
		}
	case *jsonpath.IdentifierNode:
		return n.Name == "range"
	}
	return false
}

// step is one field name, or an index when field is empty.
type step struct {
	field string
	index int
}

func simpleSteps(root *jsonpath.ListNode) ([]step, bool) {
	if root == nil || len(root.Nodes) != 1 {
		return nil, false
	}
	list, ok := root.Nodes[0].(*jsonpath.ListNode)
	if !ok {
		return nil, false
	}
	var steps []step
	for _, n := range list.Nodes {
		switch n := n.(type) {
		case *jsonpath.FieldNode:
			if n.Value == "" {
				continue // the leading "." of {.a}
			}
			steps = append(steps, step{field: n.Value})
		case *jsonpath.ArrayNode:
			p := n.Params
			if !p[0].Known || p[0].Value < 0 || !p[1].Derived || p[2].Known {
				return nil, false
			}
			steps = append(steps, step{index: p[0].Value})
		default:
			return nil, false
		}
	}
	return steps, true
}

type fieldWalk []step

func (w fieldWalk) eval(obj map[string]any) (any, bool, error) {
	var cur any = obj
	for _, s := range w {
		if s.field != "" {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false, nil
			}
			if cur, ok = m[s.field]; !ok {
				return nil, false, nil
			}
			continue
		}
		l, ok := cur.([]any)
		if !ok || s.index >= len(l) {
			return nil, false, nil
		}
		cur = l[s.index]
	}
	return cur, true, nil
}

// templatePath evaluates a full kubectl JSONPath template: only the first
// segment's results count; none is null, one is the value, several a list.
//
// client-go's JSONPath keeps state while it evaluates, so each evaluation
// borrows a parsed copy from parsed: the path is safe for concurrent use.
type templatePath struct {
	tmpl   string
	parsed sync.Pool
	needs  *projection.Set
	// reparse: the template is parsed for each evaluation.
	reparse bool
}

func parseTemplate(tmpl string) (*jsonpath.JSONPath, error) {
	jp := jsonpath.New("attribute").AllowMissingKeys(true)
	if err := jp.Parse(tmpl); err != nil {
		return nil, err
	}
	return jp, nil
}

func (t *templatePath) eval(obj map[string]any) (any, bool, error) {
	jp, _ := t.parsed.Get().(*jsonpath.JSONPath)
	if jp == nil || t.reparse {
		var err error
		if jp, err = parseTemplate(t.tmpl); err != nil {
			return nil, false, err
		}
	}
	results, err := jp.FindResults(obj)
	if !t.reparse {
		t.parsed.Put(jp)
	}
	if err != nil {
		if strings.Contains(err.Error(), "not found") {
			return nil, false, nil
		}
		return nil, false, err
	}
	if len(results) == 0 || len(results[0]) == 0 {
		return nil, false, nil
	}
	first := results[0]
	if len(first) == 1 {
		return native(first[0]), true, nil
	}
	out := make([]any, 0, len(first))
	for _, v := range first {
		out = append(out, native(v))
	}
	return out, true, nil
}

func native(v reflect.Value) any {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}
