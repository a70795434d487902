package extract

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
)

// The checker's bound decides which expressions run without a cost
// tracker: only those no input can make expensive.
func TestOnlyExpressionsTheCheckerBoundsRunUntracked(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	items := make([]any, 5000)
	for i := range items {
		items[i] = huge
	}
	// An adversarial object: the largest strings and lists an expression
	// here can reach.
	obj := map[string]any{
		"metadata": map[string]any{"name": huge, "labels": map[string]any{"app": huge}},
		"spec":     map[string]any{"replicas": int64(3), "items": items},
		"status":   map[string]any{"readyReplicas": int64(2)},
	}
	for _, tc := range []struct {
		expr    string
		tracked bool
	}{
		{"has(object.status.readyReplicas) ? object.status.readyReplicas : 0", false},
		{"object.spec.replicas", false},
		{"object.spec.replicas * 2 + 1 > 3", false},
		{"size(object.spec.items)", false},
		{"object.metadata.name", false},
		{"object.metadata.name.contains('y')", true},
		{"object.metadata.name == 'x'", false}, // compared with a constant: its size bounds the cost
		{"object.spec.items.map(i, i)", true},
		{"object.spec.items.exists(i, i == 'y')", true},
		{"object.metadata.name + object.metadata.name", true},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			env, err := celEnv()
			if err != nil {
				t.Fatal(err)
			}
			ast, iss := env.Compile(tc.expr)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			if tracked := !boundedCost(env, ast); tracked != tc.tracked {
				t.Fatalf("tracked = %v, want %v", tracked, tc.tracked)
			}
			if tc.tracked {
				return
			}
			// What the checker proved holds on the adversarial object: the
			// same expression, tracked, costs no more than the limit.
			prg, err := env.Program(ast, cel.CostTracking(nil))
			if err != nil {
				t.Fatal(err)
			}
			_, det, err := prg.Eval(map[string]any{"object": obj})
			if err != nil {
				t.Fatal(err)
			}
			if cost := det.ActualCost(); cost == nil || *cost > celCostLimit {
				t.Fatalf("actual cost %v exceeds the limit the checker proved", cost)
			}
			c, err := compileProgram(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.eval(obj); err != nil {
				t.Fatalf("untracked evaluation: %v", err)
			}
		})
	}
}
