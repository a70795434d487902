package main

import (
	"strings"
	"testing"
	"time"
)

// The distribution shows each figure's minimum, median and maximum, and
// every run in the order it ran.
func TestDistributionShowsEveryRun(t *testing.T) {
	var reps []*Report
	for _, git := range []time.Duration{900 * time.Millisecond, 3 * time.Second, 400 * time.Millisecond} {
		reps = append(reps, &Report{Cluster: &ClusterResult{AllInGit: git, AllInPostgres: 100 * time.Millisecond,
			GitBursts: []GitBurst{{Change: "update", Objects: 1000, InGit: git / 2}}}})
	}
	got := Distribution(reps)
	for _, want := range []string{
		"3 runs",
		"| every row in Git after the last create | 0.40 s | 0.90 s | 3.00 s | 0.90, 3.00, 0.40 |",
		"| Git: burst of 1000 updates, after the last write | 0.20 s | 0.45 s | 1.50 s | 0.45, 1.50, 0.20 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
}
