package envtest

import (
	"os"
	"testing"

	"golang.org/x/mod/modfile"
)

// versions reads a go.mod's requirements, replacements applied.
func versions(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range f.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range f.Replace {
		if _, ok := out[r.Old.Path]; ok && r.New.Version != "" {
			out[r.Old.Path] = r.New.Version
		}
	}
	return out
}

// TestTheControlPlaneBuildsOnKollectsVersions: every module both go.mod
// files require is at the same version in both, so the packages Kollect
// shares with kube-apiserver (client-go, apiserver, cel-go, grpc,
// OpenTelemetry, golang.org/x/…) compile once on a new machine. After a
// dependency bump in Kollect, bring the wrapper along:
//
//	cd hack/envtest/k8s && go get <module>@<version> … && go mod tidy
func TestTheControlPlaneBuildsOnKollectsVersions(t *testing.T) {
	kollect := versions(t, "../../go.mod")
	k8s := versions(t, "k8s/go.mod")
	shared := 0
	for path, v := range k8s {
		kv, ok := kollect[path]
		if !ok {
			continue
		}
		shared++
		if kv != v {
			t.Errorf("%s: Kollect requires %s, hack/envtest/k8s %s", path, kv, v)
		}
	}
	if shared < 50 {
		t.Fatalf("only %d modules in common: is this still the wrapper that builds kube-apiserver?", shared)
	}
}
