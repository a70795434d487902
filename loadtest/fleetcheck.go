package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"

	"kollect.dev/kollect/internal/servers/natstest"
)

// fleetState is what a shared sink holds: cluster → object name → version.
type fleetState map[string]map[string]string

func (s fleetState) put(cluster, name, version string) {
	if s[cluster] == nil {
		s[cluster] = map[string]string{}
	}
	if _, twice := s[cluster][name]; twice {
		name += " (a second row)" // reported as a row no object has
	}
	s[cluster][name] = version
}

func countAll(s fleetState) int {
	n := 0
	for _, c := range s {
		n += len(c)
	}
	return n
}

// fleetView reads the shared sinks.
type fleetView struct {
	bare string
	db   *pgx.Conn
	nats string
}

func (v fleetView) read(ctx context.Context, sink string) (fleetState, error) {
	switch sink {
	case "git":
		return v.git()
	case "postgres":
		return v.postgres(ctx)
	case "nats":
		return v.stream(ctx)
	}
	return nil, fmt.Errorf("unknown sink %q", sink)
}

// count is how many rows a sink holds, read more cheaply than read when
// the sink allows: Git's file list without the files, Postgres's count.
func (v fleetView) count(ctx context.Context, sink string) (int, error) {
	switch sink {
	case "git":
		files, err := gitFiles(v.bare)
		n := 0
		for _, f := range files {
			if !strings.HasPrefix(f, ".kollect/") {
				n++
			}
		}
		return n, err
	case "postgres":
		return pgCount(ctx, v.db)
	}
	st, err := v.read(ctx, sink)
	return countAll(st), err
}

// git reads the tip of main: {cluster}/{namespace}/{kind}/{name}.yaml, the
// sinks' own bookkeeping under .kollect/ left out.
func (v fleetView) git() (fleetState, error) {
	byPath, err := gitVersions(v.bare)
	if err != nil {
		return nil, err
	}
	st := fleetState{}
	for path, version := range byPath {
		if strings.HasPrefix(path, ".kollect/") {
			continue
		}
		cluster, _, _ := strings.Cut(path, "/")
		st.put(cluster, objectName(path), version)
	}
	return st, nil
}

func (v fleetView) postgres(ctx context.Context) (fleetState, error) {
	rs, err := v.db.Query(ctx, `SELECT cluster, payload->>'name', coalesce(payload->'attributes'->>'version', '') `+pgScope)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	st := fleetState{}
	for rs.Next() {
		var cluster, name, version string
		if err := rs.Scan(&cluster, &name, &version); err != nil {
			return nil, err
		}
		st.put(cluster, name, version)
	}
	return st, rs.Err()
}

// stream folds the NATS stream: each key's last change, per cluster (the
// kollect-cluster header).
func (v fleetView) stream(ctx context.Context) (fleetState, error) {
	ms, err := natstest.ReadAll(ctx, v.nats, fleetStream)
	if err != nil {
		return nil, err
	}
	type last struct{ cluster, name, version string }
	byKey := map[string]*last{}
	for _, m := range ms {
		var e struct {
			Change string `json:"change"`
			Key    string `json:"key"`
			Row    struct {
				Name       string            `json:"name"`
				Attributes map[string]string `json:"attributes"`
			} `json:"row"`
		}
		if err := json.Unmarshal(m.Data, &e); err != nil {
			return nil, fmt.Errorf("a message that is not an event: %w", err)
		}
		switch e.Change {
		case "upsert":
			byKey[e.Key] = &last{m.Header.Get("kollect-cluster"), e.Row.Name, e.Row.Attributes["version"]}
		case "delete":
			delete(byKey, e.Key)
		}
	}
	st := fleetState{}
	for _, l := range byKey {
		st.put(l.cluster, l.name, l.version)
	}
	return st, nil
}

// compareFleet counts rows that are missing, stale (including a version
// another cluster wrote), or extra (including rows under a cluster that
// does not exist), and describes the first few of each cluster.
func compareFleet(want map[string]map[string]string, got fleetState) (int, []string) {
	clusters := map[string]bool{}
	for c := range want {
		clusters[c] = true
	}
	for c := range got {
		clusters[c] = true
	}
	names := make([]string, 0, len(clusters))
	for c := range clusters {
		names = append(names, c)
	}
	sort.Strings(names)
	wrong := 0
	var diff []string
	for _, c := range names {
		var missing, stale, extra []string
		for n, v := range want[c] {
			switch g, ok := got[c][n]; {
			case !ok:
				missing = append(missing, n)
			case g != v:
				stale = append(stale, n+"="+g+" (want "+v+")")
			}
		}
		for n := range got[c] {
			if _, ok := want[c][n]; !ok {
				extra = append(extra, n)
			}
		}
		if k := len(missing) + len(stale) + len(extra); k > 0 {
			wrong += k
			first := func(s []string) []string { sort.Strings(s); return s[:min(len(s), 3)] }
			diff = append(diff, fmt.Sprintf("cluster %q: %d missing %v, %d stale %v, %d extra %v",
				c, len(missing), first(missing), len(stale), first(stale), len(extra), first(extra)))
		}
	}
	return wrong, diff
}

// matches reports whether a metric carries label=value (any metric when
// label is empty).
func matches(m *dto.Metric, label, value string) bool {
	if label == "" {
		return true
	}
	for _, l := range m.GetLabel() {
		if l.GetName() == label {
			return l.GetValue() == value
		}
	}
	return false
}

// metricSum adds up a counter or gauge family's series that match.
func metricSum(f map[string]*dto.MetricFamily, name, label, value string) float64 {
	sum := 0.0
	for _, m := range f[name].GetMetric() {
		if !matches(m, label, value) {
			continue
		}
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return sum
}

// metricCount counts a family's series that match.
func metricCount(f map[string]*dto.MetricFamily, name, label, value string) int {
	n := 0
	for _, m := range f[name].GetMetric() {
		if matches(m, label, value) {
			n++
		}
	}
	return n
}

// bucket is a cumulative histogram bucket.
type bucket struct {
	le    float64
	count float64
}

// histogram returns the buckets of the histogram series that matches, and
// its count.
func histogram(f map[string]*dto.MetricFamily, name, label, value string) ([]bucket, float64) {
	for _, m := range f[name].GetMetric() {
		if matches(m, label, value) {
			return buckets(m.GetHistogram()), float64(m.GetHistogram().GetSampleCount())
		}
	}
	return nil, 0
}

// buckets are a histogram's cumulative buckets, +Inf last.
func buckets(h *dto.Histogram) []bucket {
	out := make([]bucket, 0, len(h.GetBucket())+1)
	for _, b := range h.GetBucket() {
		out = append(out, bucket{b.GetUpperBound(), float64(b.GetCumulativeCount())})
	}
	if len(out) == 0 || !math.IsInf(out[len(out)-1].le, 1) { // the text format may carry it already
		out = append(out, bucket{math.Inf(1), float64(h.GetSampleCount())})
	}
	return out
}

// mergeBuckets adds two histograms with the same bounds.
func mergeBuckets(a, b []bucket) []bucket {
	if a == nil {
		return b
	}
	out := make([]bucket, len(a))
	for i := range a {
		out[i] = a[i]
		if i < len(b) {
			out[i].count += b[i].count
		}
	}
	return out
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linear within the bucket that holds it; in the last, unbounded
// bucket, the highest finite bound.
func quantile(h []bucket, q float64) time.Duration {
	if len(h) == 0 || h[len(h)-1].count == 0 {
		return 0
	}
	rank := q * h[len(h)-1].count
	lower, below := 0.0, 0.0
	for _, b := range h {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return time.Duration(lower * float64(time.Second))
			}
			frac := 1.0
			if b.count > below {
				frac = (rank - below) / (b.count - below)
			}
			return time.Duration((lower + (b.le-lower)*frac) * float64(time.Second))
		}
		lower, below = b.le, b.count
	}
	return 0
}

// gitLog lists main's commits.
func gitLog(bare string) []string {
	out, err := exec.Command("git", "--git-dir", bare, "rev-list", "main").Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}
