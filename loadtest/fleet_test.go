package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFleetKeepsClustersApart: three clusters' operators export the same
// object names in the same namespaces to one Git repository, one table and
// one stream, while all three churn. Every sink ends with each cluster's
// rows under that cluster, none missing, stale or written by another
// cluster. Figures are logged, never asserted.
func TestFleetKeepsClustersApart(t *testing.T) {
	bin := buildOperator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	res, err := RunFleet(ctx, FleetOptions{Binary: bin, Clusters: 3, Objects: 150, Namespaces: 3,
		ChurnRate: 20, ChurnFor: 3 * time.Second, DeleteShare: 0.2, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Diff) > 0 {
		t.Fatalf("the shared sinks do not hold every cluster's rows apart:\n%s", strings.Join(res.Diff, "\n"))
	}
	for _, sink := range []string{"git", "postgres", "nats"} {
		if res.Wrong[sink] != 0 {
			t.Errorf("%s: %d rows wrong", sink, res.Wrong[sink])
		}
	}
	if res.Updates == 0 || res.Deletes == 0 {
		t.Errorf("the churn made %d updates and %d deletes; want both", res.Updates, res.Deletes)
	}
	if res.GitExports < 3 || res.Commits < 3 || res.NATSMessages < 450 || res.PostgresRows < 450 {
		t.Errorf("want every operator to export: %.0f Git exports, %d commits, %.0f NATS messages, %.0f Postgres rows",
			res.GitExports, res.Commits, res.NATSMessages, res.PostgresRows)
	}
	written, err := (&Report{Scenario: Scenario{Name: "fleet", Mode: "fleet"}, Fleet: res}).Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	raw, _ := os.ReadFile(written[0])
	if err := json.Unmarshal(raw, &back); err != nil || back.Fleet == nil || back.Fleet.Objects != 150 || len(back.Fleet.CommitLatency) == 0 {
		t.Fatalf("report.json: %v %+v", err, back.Fleet)
	}
	if last := back.Fleet.CommitLatency[len(back.Fleet.CommitLatency)-1]; last.LE != "+Inf" {
		t.Errorf("the last latency bucket is %+v, want +Inf", last)
	}
	if !slices.ContainsFunc(written, func(f string) bool { return filepath.Base(f) == "commit-latency.png" }) {
		t.Errorf("no commit-latency.png among %v", written)
	}
	t.Logf("all rows: Git %v, Postgres %v, NATS %v; %d commits, %.0f Git exports, %.0f pushes rebuilt, %.0f failed exports; commit p50 %v p99 %v",
		res.AllIn["git"], res.AllIn["postgres"], res.AllIn["nats"], res.Commits, res.GitExports, res.GitConflicts, res.FailedExports,
		res.CommitP50, res.CommitP99)
}

func TestCompareFleet(t *testing.T) {
	want := map[string]map[string]string{"a": {"x": "a-v1", "y": "a-v0"}, "b": {"x": "b-v2"}}
	for _, tc := range []struct {
		name  string
		got   fleetState
		wrong int
		says  string
	}{
		{"exact", fleetState{"a": {"x": "a-v1", "y": "a-v0"}, "b": {"x": "b-v2"}}, 0, ""},
		{"another cluster's version", fleetState{"a": {"x": "b-v2", "y": "a-v0"}, "b": {"x": "b-v2"}}, 1, "x=b-v2 (want a-v1)"},
		{"a cluster missing", fleetState{"a": {"x": "a-v1", "y": "a-v0"}}, 1, `cluster "b": 1 missing [x]`},
		{"a cluster nobody runs", fleetState{"a": {"x": "a-v1", "y": "a-v0"}, "b": {"x": "b-v2"}, "": {"x": "a-v1"}}, 1, `cluster "": 0 missing [], 0 stale [], 1 extra [x]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wrong, diff := compareFleet(want, tc.got)
			if wrong != tc.wrong || !strings.Contains(strings.Join(diff, "\n"), tc.says) {
				t.Fatalf("got %d wrong, %q; want %d wrong, mentioning %q", wrong, diff, tc.wrong, tc.says)
			}
		})
	}
	st := fleetState{}
	st.put("a", "x", "1")
	st.put("a", "x", "1")
	if wrong, _ := compareFleet(map[string]map[string]string{"a": {"x": "1"}}, st); wrong != 1 {
		t.Fatalf("a second row for one object counted %d wrong, want 1", wrong)
	}
}

func TestQuantile(t *testing.T) {
	h := []bucket{{0.1, 10}, {1, 90}, {2.5, 100}, {math.Inf(1), 100}}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0.05, 50 * time.Millisecond},   // halfway into the first bucket
		{0.5, 550 * time.Millisecond},   // halfway through 0.1–1
		{0.99, 2350 * time.Millisecond}, // 9 of 10 into 1–2.5
	} {
		if got := quantile(h, tc.q); (got - tc.want).Abs() > time.Millisecond {
			t.Errorf("quantile %.2f = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := quantile([]bucket{{1, 0}, {math.Inf(1), 4}}, 0.5); got != time.Second {
		t.Errorf("in the unbounded bucket: %v, want the highest finite bound, 1s", got)
	}
	if got := quantile(nil, 0.5); got != 0 {
		t.Errorf("empty histogram: %v", got)
	}
}
