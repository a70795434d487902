package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "kollect.dev/kollect/"

// TestImportRules makes the layering of docs/architecture.md a check: each
// group of packages, with everything it imports transitively, stays clear
// of what it must not depend on.
func TestImportRules(t *testing.T) {
	const k = module
	// pipeline/ is the operator's top layer: reconcilers, webhooks, the
	// manager and the tools; internal/ holds the test servers, the local
	// control plane, the demo and the suites, above it. The model sits
	// apart in model/.
	top := []string{k + "pipeline/", k + "internal/"}
	controlPlane := []string{"./pipeline/admission", "./pipeline/backends", "./pipeline/controllers/...", "./pipeline/manager",
		"./pipeline/readapi", "./pipeline/scope", "./pipeline/status"}
	pureModel := []string{"./model/collect", "./model/endpoint", "./model/extract", "./model/projection", "./model/rows", "./model/selection"}
	rules := []struct {
		what      string
		packages  []string
		forbidden []string
	}{
		{"the API types import nothing of Kollect", []string{"./api/..."},
			[]string{k + "actors", k + "informers", k + "pipeline", k + "sinks", k + "model"}},
		{"the actors know neither controller-runtime nor the API types", []string{"./actors/..."},
			append([]string{"sigs.k8s.io/controller-runtime", k + "api/"}, top...)},
		{"the informers know neither actors nor API types", []string{"./informers"},
			append([]string{"sigs.k8s.io/controller-runtime", k + "actors", k + "api/"}, top...)},
		{"the model is pure: no API types, no actors, no sinks, no control plane", pureModel,
			append([]string{"sigs.k8s.io/controller-runtime", k + "actors", k + "api/", k + "sinks", k + "informers"}, top...)},
		{"compilation reads the API types and the model, nothing above", []string{"./model/compile"},
			append([]string{"sigs.k8s.io/controller-runtime", k + "actors", k + "sinks", k + "informers"}, top...)},
		{"the control plane imports no tools and no test harness", controlPlane,
			[]string{k + "pipeline/tools", k + "internal/"}},
		// make demo runs the real manager; the CLI and validate compile
		// specs as the reconcilers do, without them.
		{"the CLI and validate reach compilation, not reconcilers", []string{"./pipeline/tools/cli", "./pipeline/tools/validate"},
			[]string{k + "pipeline/controllers", k + "pipeline/manager"}},
		{"no tool a user runs imports a test server, the harness or the demo", []string{"./pipeline/tools/..."}, []string{k + "internal/"}},
		{"the sinks use no Kubernetes client", []string{"./sinks/..."},
			append([]string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go/kubernetes", "k8s.io/client-go/rest", "k8s.io/client-go/dynamic", k + "actors"}, top...)},
		{"scopes are read by reconcilers, webhooks and credentials alike", []string{"./pipeline/scope"},
			[]string{k + "actors", k + "pipeline/controllers", k + "pipeline/backends", k + "pipeline/manager"}},
	}
	for _, r := range rules {
		t.Run(r.what, func(t *testing.T) {
			for _, dep := range deps(t, r.packages...) {
				for _, f := range r.forbidden {
					if dep == strings.TrimSuffix(f, "/") || strings.HasPrefix(dep, strings.TrimSuffix(f, "/")+"/") {
						t.Errorf("%v depend on %s", r.packages, dep)
					}
				}
			}
		})
	}
}

// The folders at the top of the tree are layers: none imports a folder
// that imports it back, directly or through others, so reading the tree
// from api/ and model/ up to pipeline/ follows the imports.
func TestTopLevelFoldersFormNoCycle(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var folders []string
	for _, p := range strings.Fields(string(out)) {
		if f := folder(p); f != "" && !slices.Contains(folders, f) {
			folders = append(folders, f)
		}
	}
	edges := map[string][]string{}
	for _, f := range folders {
		for _, dep := range deps(t, "./"+f+"/...") {
			if g := folder(dep); g != "" && g != f && !slices.Contains(edges[f], g) {
				edges[f] = append(edges[f], g)
			}
		}
	}
	t.Logf("folder imports: %v", edges)
	// A depth-first walk that meets a folder on its own path found a cycle.
	state := map[string]int{} // 0 unseen, 1 on the path, 2 done
	var path []string
	var visit func(string)
	visit = func(f string) {
		state[f] = 1
		path = append(path, f)
		for _, g := range edges[f] {
			switch state[g] {
			case 1:
				i := slices.Index(path, g)
				t.Errorf("the folders import each other in a cycle: %s → %s", strings.Join(path[i:], " → "), g)
			case 0:
				visit(g)
			}
		}
		path = path[:len(path)-1]
		state[f] = 2
	}
	for _, f := range folders {
		if state[f] == 0 {
			visit(f)
		}
	}
	if len(edges["model"]) > 1 || (len(edges["model"]) == 1 && edges["model"][0] != "api") {
		t.Errorf("model/ imports %v; it may import api/ alone", edges["model"])
	}
	if t.Failed() {
		return
	}
	// docs/architecture.md shows these layers; the picture must be this one.
	want := layers(folders, edges)
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- folder imports: begin -->\n```\n", "```\n<!-- folder imports: end -->"
	_, rest, ok := strings.Cut(string(doc), begin)
	got, _, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("docs/architecture.md has no block between %q and %q", begin, end)
	}
	if got != want {
		t.Errorf("docs/architecture.md's folder imports differ from the code's; replace the block with:\n%s", want)
	}
}

// layers renders the folders in import order, the imported first, each
// with the folders it imports.
func layers(folders []string, edges map[string][]string) string {
	var b strings.Builder
	placed := map[string]bool{}
	for len(placed) < len(folders) {
		var ready []string
		for _, f := range folders {
			if placed[f] {
				continue
			}
			if !slices.ContainsFunc(edges[f], func(g string) bool { return !placed[g] }) {
				ready = append(ready, f)
			}
		}
		slices.Sort(ready)
		for _, f := range ready {
			placed[f] = true
			imports := slices.Sorted(slices.Values(edges[f]))
			line := strings.Join(imports, ", ")
			if line == "" {
				line = "(nothing of Kollect)"
			}
			fmt.Fprintf(&b, "%-10s → %s\n", f+"/", line)
		}
	}
	return b.String()
}

// deps lists what packages import, transitively (tests excluded).
func deps(t *testing.T, packages ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps"}, packages...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// folder is the top-level folder of a Kollect package ("" for the root
// package and for other modules).
func folder(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, module)
	if !ok {
		return ""
	}
	f, _, _ := strings.Cut(rest, "/")
	return f
}
