package extract

import (
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"k8s.io/client-go/util/jsonpath"

	"kollect.dev/kollect/model/projection"
)

// Reads is the part of an object the extractor's attributes and embedded
// export read. The informer cache keeps that part only.
func (e *Extractor) Reads() *projection.Set {
	s := &projection.Set{}
	for _, ev := range e.evals {
		s.Merge(ev.reads())
	}
	if e.embed != nil {
		s.Merge(projection.All()) // the export is the object itself
	}
	return s
}

// Reads is the part of an object the condition reads.
func (c *Condition) Reads() *projection.Set { return c.c.reads() }

func (w fieldWalk) reads() *projection.Set {
	var path []string
	for _, s := range w {
		if s.field == "" {
			break // an index: keep the whole list
		}
		path = append(path, s.field)
	}
	return projection.Of(path)
}

func (t *templatePath) reads() *projection.Set { return t.needs }

func (h *helmPath) reads() *projection.Set { return projection.Of([]string{"data", "release"}) }

func (c *celPath) reads() *projection.Set { return c.needs }

// templateReads keeps, for each segment of a kubectl JSONPath template, the
// subtree at its leading field names; a segment that starts with anything
// else (recursive descent, a wildcard, an index at the root) reads all.
func templateReads(root *jsonpath.ListNode) *projection.Set {
	s := &projection.Set{}
	for _, n := range root.Nodes {
		switch n := n.(type) {
		case *jsonpath.TextNode:
		case *jsonpath.ListNode:
			var path []string
			for _, step := range n.Nodes {
				f, ok := step.(*jsonpath.FieldNode)
				if !ok {
					break
				}
				if f.Value != "" {
					path = append(path, f.Value)
				}
			}
			s.Add(path...)
		default:
			return projection.All()
		}
	}
	return s
}

// celReads walks a parsed CEL expression for the fields it reads from
// `object`: every maximal chain object.a.b (or object["a"]) keeps the
// subtree at a.b; `object` used any other way (passed whole to a function,
// iterated over, indexed by a computed key) reads all.
func celReads(e ast.Expr) *projection.Set {
	s := &projection.Set{}
	var walk func(e ast.Expr)
	walk = func(e ast.Expr) {
		if path, ok := objectPath(e); ok {
			s.Add(path...)
			return
		}
		switch e.Kind() {
		case ast.CallKind:
			c := e.AsCall()
			if c.IsMemberFunction() {
				walk(c.Target())
			}
			for _, a := range c.Args() {
				walk(a)
			}
		case ast.ComprehensionKind:
			c := e.AsComprehension()
			for _, x := range []ast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
				walk(x)
			}
		case ast.ListKind:
			for _, x := range e.AsList().Elements() {
				walk(x)
			}
		case ast.MapKind:
			for _, en := range e.AsMap().Entries() {
				walk(en.AsMapEntry().Key())
				walk(en.AsMapEntry().Value())
			}
		case ast.StructKind:
			for _, f := range e.AsStruct().Fields() {
				walk(f.AsStructField().Value())
			}
		case ast.SelectKind:
			walk(e.AsSelect().Operand())
		}
	}
	walk(e)
	return s
}

// objectPath returns the field names of a chain rooted at the `object`
// variable: selections, optional selections and indexes by a constant
// string.
func objectPath(e ast.Expr) ([]string, bool) {
	switch e.Kind() {
	case ast.IdentKind:
		return nil, e.AsIdent() == "object"
	case ast.SelectKind:
		sel := e.AsSelect()
		p, ok := objectPath(sel.Operand())
		return append(p, sel.FieldName()), ok
	case ast.CallKind:
		c := e.AsCall()
		switch c.FunctionName() {
		case operators.Index, operators.OptIndex, operators.OptSelect:
		default:
			return nil, false
		}
		args := c.Args()
		if len(args) != 2 || args[1].Kind() != ast.LiteralKind {
			return nil, false
		}
		key, isString := args[1].AsLiteral().(types.String)
		if !isString {
			return nil, false
		}
		p, ok := objectPath(args[0])
		return append(p, string(key)), ok
	}
	return nil, false
}
