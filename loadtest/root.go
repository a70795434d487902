package main

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// operatorModule is the module the harness builds and runs as the operator.
const operatorModule = "kollect.dev/kollect"

// repoRoot finds the Kollect checkout the harness runs in: the nearest
// directory at or above the working directory whose go.mod is the
// operator's module. The harness is a module of its own (its plotting
// library stays out of the operator's), so the operator is built from
// there, with the operator's own go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if moduleOf(filepath.Join(dir, "go.mod")) == operatorModule {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside a Kollect checkout: run the harness from the repository (make loadtest, or go run . in loadtest/)")
		}
		dir = parent
	}
}

func moduleOf(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}
