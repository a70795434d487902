package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestClusterModeLosesNothing: a short cluster run (a few hundred
// ConfigMaps, a few seconds of churn) ends with Git and Postgres holding
// exactly what the API server holds. Figures are logged, never asserted.
func TestClusterModeLosesNothing(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kollect")
	if out, err := exec.Command("go", "build", "-o", bin, "kollect.dev/kollect").CombinedOutput(); err != nil {
		t.Fatalf("build the operator: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := RunCluster(ctx, ClusterOptions{Binary: bin, Objects: 300, Namespaces: 5, CreateRate: 300,
		ChurnRate: 50, ChurnFor: 3 * time.Second, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if res.LostPostgres != 0 || res.LostGit != 0 || res.Duplicated != 0 {
		t.Fatalf("lost %d in Postgres, %d in Git, %d duplicated", res.LostPostgres, res.LostGit, res.Duplicated)
	}
	if res.Updates == 0 || len(res.LagSamples) == 0 {
		t.Fatalf("churn made %d updates and measured %d lags", res.Updates, len(res.LagSamples))
	}
	t.Logf("all rows: Git %v, Postgres %v after the last create; lag %v; peak RSS %d MiB; mailboxes %v",
		res.AllInGit, res.AllInPostgres, res.Lag, res.PeakRSSBytes>>20, res.MaxMailbox)
}
