package main

import (
	"path/filepath"
	"testing"
)

// TestShippedScenariosParse: every shipped scenario name resolves through
// the command line (whose -kubeconfig must not collide with
// controller-runtime's global flag) to a valid scenario file.
func TestShippedScenariosParse(t *testing.T) {
	files, err := filepath.Glob("scenarios/*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("scenarios: %v %v", files, err)
	}
	for _, file := range files {
		name := filepath.Base(file[:len(file)-len(".yaml")])
		f, err := parseFlags([]string{"-scenario", name, "-kubeconfig", "/tmp/kc", "-gomemlimit", "300MiB"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.kubeconfig != "/tmp/kc" || f.memLimit != "300MiB" {
			t.Errorf("%s: flags read as %+v", name, f)
		}
		if _, err := LoadScenario(f.scenario); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := parseFlags([]string{"-scenario", "10k", "extra"}); err == nil {
		t.Error("a stray argument was accepted")
	}
}
