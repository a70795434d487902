package extract

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"

	"kollect.dev/kollect/model/projection"
)

// celEnv declares the single dynamic variable `object`.
func celEnv() (*cel.Env, error) {
	return cel.NewEnv(cel.Variable("object", cel.DynType))
}

// celCostLimit bounds one evaluation of a user's expression (the order of
// the API server's per-expression limit for validation rules), so no
// expression can hang or starve the engine however large its input.
//
// An expression whose worst case the checker proves under the limit for
// any input (field reads, comparisons, arithmetic: nothing whose cost
// grows with a string's or a list's size) runs without a cost tracker.
// Every other one has the interpreter count its cost as it goes and stop at
// the limit. Tracking is what costs: it wraps every intermediate map in a
// CEL value to observe it, about eight allocations and half a microsecond
// per object for `has(object.a.b) ? object.a.b : 0`; a per-evaluation
// wall-clock interrupt would cost more and bound nothing more.
const celCostLimit = 1_000_000

// boundedCost reports whether the checker proves that no input can make ast
// cost more than the limit. Sizes of the object's strings, lists and maps
// are unknown (they come from the cluster), so any cost that depends on
// them is unbounded here.
func boundedCost(env *cel.Env, ast *cel.Ast) bool {
	est, err := env.EstimateCost(ast, unknownSizes{})
	return err == nil && est.Max <= celCostLimit
}

// unknownSizes is a cost estimator that knows nothing: the checker assumes
// the worst for every size.
type unknownSizes struct{}

func (unknownSizes) EstimateSize(checker.AstNode) *checker.SizeEstimate { return nil }

func (unknownSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

func compileProgram(expr string) (*celPath, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("cel environment: %w", err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("invalid CEL %q: %w", expr, iss.Err())
	}
	var opts []cel.ProgramOption
	if !boundedCost(env, ast) {
		opts = append(opts, cel.CostLimit(celCostLimit))
	}
	prg, err := env.Program(ast, opts...)
	if err != nil {
		return nil, fmt.Errorf("invalid CEL %q: %w", expr, err)
	}
	return &celPath{prg: prg, needs: celReads(ast.NativeRep().Expr())}, nil
}

// objectActivation binds `object` without allocating a map per evaluation.
type objectActivation struct{ obj map[string]any }

func (a *objectActivation) ResolveName(name string) (any, bool) {
	if name == "object" {
		return a.obj, true
	}
	return nil, false
}

func (a *objectActivation) Parent() interpreter.Activation { return nil }

// celPath is a compiled expression; it is safe for concurrent use (each
// evaluation borrows an activation from acts, so none is allocated per
// object once the pool is warm).
type celPath struct {
	prg   cel.Program
	acts  sync.Pool
	needs *projection.Set
}

func compileCEL(expr string) (evaluator, error) { return compileProgram(expr) }

func (c *celPath) eval(obj map[string]any) (any, bool, error) {
	act, _ := c.acts.Get().(*objectActivation)
	if act == nil {
		act = &objectActivation{}
	}
	act.obj = obj
	out, _, err := c.prg.Eval(act)
	act.obj = nil
	c.acts.Put(act)
	if err != nil {
		return nil, false, fmt.Errorf("cel: %w", err)
	}
	if out == types.NullValue {
		return nil, false, nil
	}
	return celNative(out), true, nil
}

// celNative converts a CEL value into plain Go values (maps, lists,
// scalars) that encode to JSON.
func celNative(v ref.Val) any {
	switch v := v.(type) {
	case traits.Mapper:
		if m, ok := v.Value().(map[string]any); ok {
			return m
		}
		out := map[string]any{}
		it := v.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			out[fmt.Sprint(celNative(k))] = celNative(v.Get(k))
		}
		return out
	case traits.Lister:
		if l, ok := v.Value().([]any); ok {
			return l
		}
		var out []any
		it := v.Iterator()
		for it.HasNext() == types.True {
			out = append(out, celNative(it.Next()))
		}
		return out
	case types.Timestamp:
		return v.Time.UTC().Format("2006-01-02T15:04:05Z07:00")
	case types.Duration:
		return v.Duration.String()
	}
	return v.Value()
}

// Condition is a compiled CEL boolean expression over `object`, as used by
// resourceRules[].matchPolicy.
type Condition struct{ c *celPath }

// CompileCondition compiles a boolean CEL expression.
func CompileCondition(expr string) (*Condition, error) {
	c, err := compileProgram(expr)
	if err != nil {
		return nil, err
	}
	return &Condition{c: c}, nil
}

// Match reports whether the expression is true for obj; an evaluation error
// or a non-boolean result is no match.
func (c *Condition) Match(obj map[string]any) bool {
	v, found, err := c.c.eval(obj)
	if err != nil || !found {
		return false
	}
	b, ok := v.(bool)
	return ok && b
}
