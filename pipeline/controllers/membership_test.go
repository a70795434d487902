package controllers_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"kollect.dev/kollect/pipeline/controllers"
)

// labelled is a namespace cache: namespace → its team label.
type labelled map[string]string

func (l labelled) team(team string) func(string) bool {
	return func(ns string) bool { t, ok := l[ns]; return ok && t == team }
}

func (l labelled) match(team string) controllers.Match {
	var names []string
	for ns, t := range l {
		if t == team {
			names = append(names, ns)
		}
	}
	return controllers.Match{Names: names, Test: l.team(team)}
}

// A namespace event concerns a target only when it moves that target's
// matched set: joins, leaves or goes; a degraded target (no test) never.
func TestANamespaceChangeRequeuesOnlyTheTargetsItMoves(t *testing.T) {
	nss := labelled{"a-1": "a", "b-1": "b"}
	m := controllers.NewMembership()
	a, b, broken := types.NamespacedName{Namespace: "a-1", Name: "t"}, types.NamespacedName{Namespace: "b-1", Name: "t"}, types.NamespacedName{Name: "broken"}
	for key, match := range map[types.NamespacedName]controllers.Match{a: nss.match("a"), b: nss.match("b"), broken: {}} {
		if m.Record(key, m.Seq(), match) {
			t.Fatalf("%s: stale with no change in between", key)
		}
	}
	steps := []struct {
		name   string
		change func()
		ns     string
		want   []types.NamespacedName
	}{
		{"an unrelated namespace appears", func() { nss["ci-1"] = "" }, "ci-1", nil},
		{"a namespace joins team a", func() { nss["a-2"] = "a" }, "a-2", []types.NamespacedName{a}},
		{"a namespace moves from b to a", func() { nss["b-1"] = "a" }, "b-1", []types.NamespacedName{a, b}},
		{"a matched namespace goes", func() { delete(nss, "a-1") }, "a-1", []types.NamespacedName{a}},
	}
	for _, s := range steps {
		s.change()
		got := m.Changed(s.ns)
		slices.SortFunc(got, func(x, y types.NamespacedName) int { return strings.Compare(x.String(), y.String()) })
		if !slices.Equal(got, s.want) {
			t.Errorf("%s: requeued %v, want %v", s.name, got, s.want)
		}
		// The requeued targets reconcile and record what they match now.
		for _, key := range got {
			team := map[types.NamespacedName]string{a: "a", b: "b"}[key]
			m.Record(key, m.Seq(), nss.match(team))
		}
	}
}

// A reconcile that read the namespaces before a change it did not see
// records a stale match and must run again; one the change does not
// concern, or that saw none, need not.
func TestAMatchReadBeforeAChangeIsStale(t *testing.T) {
	nss := labelled{"a-1": "a"}
	key := types.NamespacedName{Namespace: "a-1", Name: "t"}
	cases := []struct {
		name    string
		changes int
		ns      string
		want    bool
	}{
		{"no change meanwhile", 0, "", false},
		{"an unrelated change meanwhile", 1, "ci-1", false},
		{"a change that moves the match", 1, "a-2", true},
		{"more changes than are remembered", 1100, "ci-1", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := controllers.NewMembership()
			since := m.Seq()
			match := nss.match("a") // read before the changes
			for i := range c.changes {
				ns := c.ns
				if c.ns == "a-2" {
					nss["a-2"] = "a"
					defer delete(nss, "a-2")
				}
				if i > 0 {
					ns = fmt.Sprintf("%s-%d", c.ns, i)
				}
				m.Changed(ns)
			}
			if got := m.Record(key, since, match); got != c.want {
				t.Errorf("stale = %v, want %v", got, c.want)
			}
		})
	}
}
