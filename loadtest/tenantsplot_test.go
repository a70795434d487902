package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPlotTenantsDrawsRunsAgainstTeams(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, n := range []int{1000, 100, 300} {
		r := Report{Tenants: &TenantsResult{Tenants: n, AllSynced: time.Duration(n) * 100 * time.Millisecond, PeakRSS: int64(n) << 20,
			RestartRequests: []APIRequests{{Request: "PATCH kollectinventories/status", Count: float64(n)}}}}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, strings.Repeat("r", n/100)+".json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	out := filepath.Join(dir, "tenants.png")
	if err := plotTenants(out, paths); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("%s is not a PNG", out)
	}
	if err := plotTenants(out, paths[:1]); err == nil || !strings.Contains(err.Error(), "two runs") {
		t.Fatalf("one run: %v", err)
	}
	other := filepath.Join(dir, "engine.json")
	if err := os.WriteFile(other, []byte(`{"engine": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := plotTenants(out, []string{paths[0], other}); err == nil || !strings.Contains(err.Error(), "not the report of a tenants run") {
		t.Fatalf("an engine report: %v", err)
	}
}
