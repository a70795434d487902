package extract_test

import (
	"strings"
	"testing"
	"time"

	"kollect.dev/kollect/model/extract"
)

// A user's expression that would run for minutes on a large object is cut
// off by the cost limit with an error naming the attribute, quickly.
func TestARunawayCELExpressionIsStoppedByItsCostLimit(t *testing.T) {
	e, err := extract.Compile([]extract.Attribute{{Name: "pairs",
		Path: "cel:object.items.map(a, object.items.map(b, object.items.map(c, a + b + c))).size()"}}, extract.NewScrubber())
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 2000)
	for i := range items {
		items[i] = int64(i)
	}
	start := time.Now()
	_, err = e.Extract(map[string]any{"items": items})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), `attribute "pairs"`) || !strings.Contains(err.Error(), "cost limit") {
		t.Fatalf("want the cost limit reported for attribute pairs, got %v", err)
	}
	t.Logf("stopped after %s", took)
	// The same expression on a small object is fine.
	got, err := e.Extract(map[string]any{"items": []any{int64(1), int64(2)}})
	if err != nil || got.Get("pairs") != int64(2) {
		t.Fatalf("small input: got %v, %v", got, err)
	}
}

// JSONPath has no cost limit: its cost is bounded by shape. One recursive
// descent is allowed (it walks the object once); a path with more is
// refused when it is compiled, with a message saying what to do instead.
func TestJSONPathRecursiveDescentIsBounded(t *testing.T) {
	cases := []struct {
		path string
		ok   bool
	}{
		{"{..image}", true},
		{"{.spec..image}", true},
		{"{range .items[*]}{..name}{end}", true},
		{"{..containers..image}", false},
		{"{..a..b..c}", false},
		{"{range ..items[*]}{..name}{end}", false},
		{"{.items[?(@..x == 1)]..y}", false},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			_, err := extract.Compile([]extract.Attribute{{Name: "x", Path: c.path}}, extract.NewScrubber())
			switch {
			case c.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !c.ok && (err == nil || !strings.Contains(err.Error(), "descends recursively (..)")):
				t.Fatalf("want a refusal naming the recursive descents, got %v", err)
			}
		})
	}
}
