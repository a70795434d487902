package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportRules makes the layering of docs/architecture.md a check: each
// group of packages, with everything it imports transitively, stays clear
// of what it must not depend on.
func TestImportRules(t *testing.T) {
	const k = "kollect.dev/kollect/"
	controlPlane := []string{k + "pipeline/controlplane", k + "pipeline/tools", k + "pipeline/harness"}
	rules := []struct {
		what      string
		packages  []string
		forbidden []string
	}{
		{"the API types import nothing of Kollect", []string{"./api/..."},
			[]string{k + "actors", k + "informers", k + "pipeline", k + "sinks"}},
		{"the actors know neither controller-runtime nor the API types", []string{"./actors/..."},
			append([]string{"sigs.k8s.io/controller-runtime", k + "api/"}, controlPlane...)},
		{"the informers know neither actors nor API types", []string{"./informers"},
			[]string{"sigs.k8s.io/controller-runtime", k + "actors", k + "api/"}},
		{"the model imports no control plane", []string{"./pipeline/model/..."},
			append([]string{"sigs.k8s.io/controller-runtime", k + "actors", k + "api/"}, controlPlane...)},
		{"the control plane imports no tools and no test harness", []string{"./pipeline/controlplane/..."},
			[]string{k + "pipeline/tools", k + "pipeline/harness"}},
		// make demo runs its cluster on the harness's local control plane.
		// make demo runs the real manager; the CLI and validate compile
		// specs as the reconcilers do, without them.
		{"the CLI and validate reach compilation, not reconcilers", []string{"./pipeline/tools/cli", "./pipeline/tools/validate"},
			[]string{k + "pipeline/controlplane/controllers", k + "pipeline/controlplane/manager", k + "pipeline/harness"}},
		{"no tool imports a test suite", []string{"./pipeline/tools/..."}, []string{k + "pipeline/harness/conformance"}},
		{"compilation is shared, not part of the control plane", []string{"./pipeline/compile"}, controlPlane},
		{"the sinks use no Kubernetes client", []string{"./sinks/..."},
			append([]string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go/kubernetes", "k8s.io/client-go/rest", "k8s.io/client-go/dynamic", k + "actors"}, controlPlane...)},
		{"scopes are read by reconcilers, webhooks and credentials alike", []string{"./pipeline/controlplane/scope"},
			[]string{k + "actors", k + "pipeline/controlplane/controllers", k + "pipeline/controlplane/backends", k + "pipeline/controlplane/manager"}},
	}
	for _, r := range rules {
		t.Run(r.what, func(t *testing.T) {
			out, err := exec.Command("go", append([]string{"list", "-deps"}, r.packages...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, out)
			}
			for _, dep := range strings.Fields(string(out)) {
				for _, f := range r.forbidden {
					if dep == strings.TrimSuffix(f, "/") || strings.HasPrefix(dep, strings.TrimSuffix(f, "/")+"/") {
						t.Errorf("%v depend on %s", r.packages, dep)
					}
				}
			}
		})
	}
}
