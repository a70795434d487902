package extract

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"kollect.dev/kollect/model/projection"
	"kollect.dev/kollect/model/rows"
)

// Attribute is one profile attribute.
type Attribute struct {
	Name     string
	Path     string
	Optional bool
}

// evaluator yields the value at one attribute path; found=false means the
// path matched nothing (the attribute is null).
type evaluator interface {
	eval(obj map[string]any) (value any, found bool, err error)
	// reads is the part of the object eval looks at.
	reads() *projection.Set
}

// Extractor evaluates a profile's attributes against objects.
type Extractor struct {
	names    []string
	optional []bool
	evals    []evaluator
	// order is the attributes' indices in name order, each name once (the
	// last one declared): the order rows keep attributes in.
	order []int
	scrub *Scrubber
	embed *Embed
}

// WithEmbed makes Extract also store the pruned object (Resource mode).
func (e *Extractor) WithEmbed(em *Embed) *Extractor {
	e.embed = em
	return e
}

// Compile parses and compiles every attribute path. The error names each
// attribute that does not compile. scrub may be nil (no redaction).
func Compile(attrs []Attribute, scrub *Scrubber) (*Extractor, error) {
	e := &Extractor{scrub: scrub}
	var errs []error
	for _, a := range attrs {
		ev, err := compilePath(a.Path)
		if err != nil {
			errs = append(errs, fmt.Errorf("attribute %q: %w", a.Name, err))
			continue
		}
		e.names = append(e.names, a.Name)
		e.optional = append(e.optional, a.Optional)
		e.evals = append(e.evals, ev)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	last := make(map[string]int, len(e.names)) // a name's last declaration wins
	for i, n := range e.names {
		last[n] = i
	}
	for _, i := range last {
		e.order = append(e.order, i)
	}
	slices.SortFunc(e.order, func(a, b int) int { return strings.Compare(e.names[a], e.names[b]) })
	return e, nil
}

func compilePath(path string) (evaluator, error) {
	switch {
	case strings.HasPrefix(path, "cel:"):
		return compileCEL(strings.TrimPrefix(path, "cel:"))
	case strings.HasPrefix(path, "helm:release."):
		return compileHelm(strings.TrimPrefix(path, "helm:release."))
	case strings.HasPrefix(path, "object.") || strings.HasPrefix(path, "object["):
		return nil, errors.New("CEL expressions must use the cel: prefix")
	default:
		return compileJSONPath(path)
	}
}

// Extract evaluates every attribute of obj, in name order. A required
// attribute that fails to evaluate fails the object with an error naming
// the attribute.
func (e *Extractor) Extract(obj map[string]any) (rows.Attributes, error) {
	n := len(e.order)
	if e.embed != nil {
		n++
	}
	out := make(rows.Attributes, 0, n)
	for _, i := range e.order {
		v, found, err := e.evals[i].eval(obj)
		switch {
		case err != nil && e.optional[i]:
			continue
		case err != nil:
			return nil, fmt.Errorf("attribute %q: %w", e.names[i], err)
		case !found || v == nil:
			if e.optional[i] {
				continue
			}
			out = append(out, rows.Attribute{Name: e.names[i]})
		default:
			if e.scrub != nil {
				v = e.scrub.Value(v)
			}
			out = append(out, rows.Attribute{Name: e.names[i], Value: v})
		}
	}
	if e.embed != nil { // it replaces an attribute of the same name
		out = out.With(rows.Attribute{Name: e.embed.As, Value: e.embed.Apply(obj, e.scrub)})
	}
	return out, nil
}
