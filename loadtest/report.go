package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Machine describes where a run happened.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpuModel"`
	MemoryMiB int64  `json:"memoryMiB"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
}

// Report is one run: its settings, the machine and every figure.
type Report struct {
	Scenario  Scenario       `json:"scenario"`
	Machine   Machine        `json:"machine"`
	StartedAt time.Time      `json:"startedAt"`
	Engine    *EngineResult  `json:"engine,omitempty"`
	Cluster   *ClusterResult `json:"cluster,omitempty"`
	Fleet     *FleetResult   `json:"fleet,omitempty"`
	Tenants   *TenantsResult `json:"tenants,omitempty"`
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		_, _ = fmt.Sscanf(string(b), "MemTotal: %d kB", &kb)
		m.MemoryMiB = kb / 1024
	}
	return m
}

// Write saves report.json, report.md and the plots under dir and returns
// the files written.
func (r *Report) Write(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	j, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), j, 0o644); err != nil {
		return nil, err
	}
	files = append(files, filepath.Join(dir, "report.json"))
	var md strings.Builder
	r.markdown(&md)
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(md.String()), 0o644); err != nil {
		return nil, err
	}
	files = append(files, filepath.Join(dir, "report.md"))
	heaps := map[string][]byte{}
	switch {
	case r.Cluster != nil:
		heaps["heap.pb.gz"] = r.Cluster.HeapProfile
	case r.Tenants != nil:
		heaps["heap.pb.gz"] = r.Tenants.HeapProfile
		heaps["heap-restart.pb.gz"] = r.Tenants.RestartHeapProfile
		if c := r.Tenants.Churn; c != nil {
			heaps["cpu-churn.pb.gz"] = c.CPUProfile
		}
		heaps["goroutines-slow-restart.txt"] = r.Tenants.SlowRestartGoroutines
		heaps["cpu-restart.pb.gz"] = r.Tenants.RestartCPUProfile
	}
	for name, heap := range heaps {
		if len(heap) == 0 {
			continue
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, heap, 0o644); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	for name, draw := range map[string]func() (*plot.Plot, bool){"mailbox.png": r.mailboxPlot, "lag.png": r.lagPlot, "rss.png": r.rssPlot,
		"commit-latency.png": r.commitLatencyPlot} {
		p, ok := draw()
		if !ok {
			continue
		}
		path := filepath.Join(dir, name)
		if err := p.Save(8*vg.Inch, 3.5*vg.Inch, path); err != nil {
			return files, fmt.Errorf("plot %s: %w", name, err)
		}
		files = append(files, path)
	}
	return files, nil
}

// Summary prints the short table.
func (r *Report) Summary(w io.Writer) {
	var b strings.Builder
	r.table(&b)
	fmt.Fprint(w, b.String())
}

func (r *Report) table(b *strings.Builder) {
	row := func(k, v string) { fmt.Fprintf(b, "| %s | %s |\n", k, v) }
	b.WriteString("| figure | value |\n|---|---|\n")
	if e := r.Engine; e != nil {
		row("engine: events", fmt.Sprint(e.Events))
		row("engine: events/s", fmt.Sprintf("%.0f", e.EventsPerSec))
		row("engine: allocations per event", fmt.Sprintf("%.1f", e.AllocsPerEvent))
		row("engine: bytes retained per row", fmt.Sprintf("%.0f", e.BytesPerRow))
		row("engine: sink exports", fmt.Sprint(e.Exports))
		row("engine: rows lost / duplicated", fmt.Sprintf("%d / %d", e.Lost, e.Duplicated))
		row("engine: max mailbox depth", fmt.Sprint(e.MaxMailbox))
		row("engine: peak RSS (harness and engine)", mib(e.PeakRSSBytes))
	}
	if c := r.Cluster; c != nil {
		row("cluster: objects (Deployments)", fmt.Sprintf("%d (%d)", c.Objects, c.Deployments))
		row("cluster: objects created in", c.CreateDuration.Round(time.Millisecond).String())
		row("cluster: all rows in Git after the last create", c.AllInGit.Round(time.Millisecond).String())
		row("cluster: all rows in Postgres after the last create", c.AllInPostgres.Round(time.Millisecond).String())
		row("cluster: Git pushes from 5 s before the last create (s after it: files)", pushTimeline(c.GitPushes))
		for _, b := range c.GitBursts {
			row(fmt.Sprintf("cluster: Git burst of %d %ss: written in, all in Git after the last write", b.Objects, b.Change),
				fmt.Sprintf("%v, %v (pushes: %s)", b.Written.Round(time.Millisecond), b.InGit.Round(time.Millisecond), pushTimeline(b.Pushes)))
		}
		row("cluster: churn updates / deletes / re-creates", fmt.Sprintf("%d / %d / %d", c.Updates, c.Deletes, c.Creates))
		row("cluster: lag p50 / p95 / p99 / max (write → Postgres)", fmt.Sprintf("%v / %v / %v / %v",
			c.LagP50.Round(time.Millisecond), c.LagP95.Round(time.Millisecond), c.LagP99.Round(time.Millisecond), c.LagMax.Round(time.Millisecond)))
		row("cluster: rows lost in Postgres / Git, duplicated", fmt.Sprintf("%d / %d, %d", c.LostPostgres, c.LostGit, c.Duplicated))
		row("cluster: operator peak RSS (anonymous, without file-backed pages)", fmt.Sprintf("%s (%s)", mib(c.PeakRSSBytes), mib(c.PeakAnonBytes)))
		if g := c.Cgroup; g != nil {
			row("cluster: operator memory cgroup: limit, peak working set, peak charged (with page cache), times at the limit, OOM kills, pages read back (major faults)",
				fmt.Sprintf("%s, %s, %s, %d, %d, %d", mib(g.Limit), mib(g.PeakWorkingSet), mib(g.Peak), g.LimitHits, g.OOMKills, g.MajorFaults))
		}
		if c.GoMemLimitBytes > 0 && c.GoMemLimitBytes < 1<<62 {
			row("cluster: operator soft memory limit (GOMEMLIMIT)", mib(c.GoMemLimitBytes))
		}
		row("cluster: operator live heap once every row arrived and the exports settled", mib(c.LiveHeapBytes))
		row("cluster: operator CPU time (of it in the kernel)", fmt.Sprintf("%.1f s (%.1f s)", c.OperatorCPU, c.OperatorSystemCPU))
		for _, t := range []string{"git", "postgres"} {
			if e, ok := c.Exports[t]; ok {
				row("cluster: "+t+" exports: count, mean, p99", fmt.Sprintf("%.0f, %v, %v", e.Count, e.Mean.Round(time.Millisecond), e.P99.Round(time.Millisecond)))
			}
		}
		row("cluster: max mailbox depth", fmt.Sprint(c.MaxMailbox))
	}
	if f := r.Fleet; f != nil {
		ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
		row("fleet: clusters × objects", fmt.Sprintf("%s × %d", strings.Join(f.Clusters, ", "), f.Objects))
		row("fleet: objects created in (all clusters at once)", ms(f.CreateDuration))
		row("fleet: every cluster's rows in Git / Postgres / NATS after the last create",
			fmt.Sprintf("%s / %s / %s", ms(f.AllIn["git"]), ms(f.AllIn["postgres"]), ms(f.AllIn["nats"])))
		row("fleet: churn updates / deletes / re-creates (all clusters)", fmt.Sprintf("%d / %d / %d", f.Updates, f.Deletes, f.Creates))
		row("fleet: Git commits / exports / pushes another cluster beat (rebuilt)", fmt.Sprintf("%d / %.0f / %.0f", f.Commits, f.GitExports, f.GitConflicts))
		row("fleet: Git commit latency p50 / p99 (export: fetch, build, push, rebuilds)", ms(f.CommitP50)+" / "+ms(f.CommitP99))
		row("fleet: failed exports, any sink (retried)", fmt.Sprintf("%.0f", f.FailedExports))
		row("fleet: Postgres rows written (rows/s)", fmt.Sprintf("%.0f (%.0f)", f.PostgresRows, f.PostgresRowsPerSec))
		row("fleet: NATS messages published (messages/s)", fmt.Sprintf("%.0f (%.0f)", f.NATSMessages, f.NATSMessagesPerSec))
		row("fleet: rows wrong in Git / Postgres / NATS (missing, stale, extra, another cluster's)",
			fmt.Sprintf("%d / %d / %d", f.Wrong["git"], f.Wrong["postgres"], f.Wrong["nats"]))
	}
	if t := r.Tenants; t != nil {
		ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
		row("tenants: teams × objects each", fmt.Sprintf("%d × %d", t.Tenants, t.Objects/max(t.Tenants, 1)))
		row("tenants: every inventory synced after the first pipeline was applied", ms(t.AllSynced))
		for _, name := range slices.Sorted(maps.Keys(t.SyncedBySink)) {
			row("tenants: … the last "+name+" binding (whole seconds)", ms(t.SyncedBySink[name]))
		}
		row("tenants: every binding acknowledged after a restart", ms(t.RestartAcked))
		for _, name := range slices.Sorted(maps.Keys(t.RestartAckedBySink)) {
			row("tenants: … the last "+name+" binding (whole seconds)", ms(t.RestartAckedBySink[name]))
		}
		row("tenants: Postgres connections, peak (before / after the restart)", fmt.Sprintf("%d / %d", t.PostgresConns, t.PostgresConnsRestart))
		row("tenants: Git mirrors (bytes)", fmt.Sprintf("%d (%s)", t.GitMirrors, mib(t.GitMirrorBytes)))
		row("tenants: Kafka bytes read back after the restart (one read of the topic)", fmt.Sprintf("%.2f MiB (%.2f MiB)", float64(t.TopicBytesRead)/(1<<20), float64(t.TopicBytes)/(1<<20)))
		row("tenants: Secret reads at the API server (sync / churn / restart)", fmt.Sprintf("%.0f / %.0f / %.0f", t.SecretReads[0], t.SecretReads[1], t.SecretReads[2]))
		for _, r := range t.RestartRequests {
			row("tenants: API requests after the restart: "+r.Request, fmt.Sprintf("%.0f", r.Count))
		}
		row("tenants: API server and etcd CPU (sync / churn / restart)", fmt.Sprintf("%.1f / %.1f / %.1f s", t.ControlPlaneCPU[0], t.ControlPlaneCPU[1], t.ControlPlaneCPU[2]))
		row("tenants: /metrics series", fmt.Sprint(t.Series))
		if c := t.Churn; c != nil {
			row("tenants: namespaces created and deleted during the churn", fmt.Sprint(c.Namespaces))
			row("tenants: a profile edit during the churn, until every row of its team carries it", ms(c.EditTook))
			row("tenants: largest target status during the churn", fmt.Sprintf("%d bytes", c.StatusBytes))
			row("tenants: /metrics series before / after the churn (naming a deleted namespace)",
				fmt.Sprintf("%d / %d (%d)", t.SeriesBeforeChurn, t.SeriesAfterChurn, c.SeriesOfGone))
		}
		row("tenants: largest target status", fmt.Sprintf("%d bytes", t.TargetStatusBytes))
		row("tenants: target statuses the restart changed", t.RestartTargetStatus.String())
		row("tenants: inventory statuses the restart changed", t.RestartInventoryStatus.String())
		row("tenants: inventory versions not Synced during the restart, by reason", fmt.Sprint(t.RestartNotSynced))
		row("tenants: operator peak RSS, CPU (both processes)", fmt.Sprintf("%s, %.1f s", mib(t.PeakRSS), t.CPUSeconds))
	}
}

func mib(b int64) string { return fmt.Sprintf("%d MiB", b>>20) }

func (r *Report) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "# Kollect load test: %s\n\n%s\n\n", r.Scenario.Name, r.Scenario.Description)
	fmt.Fprintf(b, "Started %s on %d CPUs (%s), %d MiB, %s %s.\n\n", r.StartedAt.UTC().Format(time.RFC3339), r.Machine.CPUs,
		r.Machine.CPUModel, r.Machine.MemoryMiB, r.Machine.GoVersion, r.Machine.OS)
	s, _ := json.Marshal(r.Scenario)
	fmt.Fprintf(b, "Settings: `%s`\n\n", s)
	r.table(b)
	b.WriteString("\nPlots (when the run produced the data): `mailbox.png` (max mailbox depth per actor kind over time), " +
		"`lag.png` (end-to-end lag of each change, cluster mode), `rss.png` (RSS over time), " +
		"`commit-latency.png` (Git exports per duration while the clusters push to one branch, fleet mode).\n")
}

func (r *Report) samples() []Sample {
	if r.Cluster != nil {
		return r.Cluster.Samples
	}
	if r.Tenants != nil {
		return r.Tenants.Samples
	}
	if r.Engine != nil {
		return r.Engine.Samples
	}
	return nil
}

func (r *Report) mailboxPlot() (*plot.Plot, bool) {
	ss := r.samples()
	if len(ss) < 2 {
		return nil, false
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = "Mailbox depth", "seconds", "messages (max per actor kind)"
	var args []any
	for _, kind := range []string{"target", "inventory", "sink"} {
		pts := make(plotter.XYs, len(ss))
		for i, s := range ss {
			pts[i].X, pts[i].Y = s.At.Seconds(), s.Mailbox[kind]
		}
		args = append(args, kind, pts)
	}
	if err := plotutil.AddLines(p, args...); err != nil {
		return nil, false
	}
	return p, true
}

func (r *Report) rssPlot() (*plot.Plot, bool) {
	ss := r.samples()
	if len(ss) < 2 {
		return nil, false
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = "Resident memory", "seconds", "MiB"
	rss, anon, charged := make(plotter.XYs, len(ss)), make(plotter.XYs, len(ss)), make(plotter.XYs, len(ss))
	inCgroup := false
	for i, s := range ss {
		rss[i].X, rss[i].Y = s.At.Seconds(), float64(s.RSSBytes)/(1<<20)
		anon[i].X, anon[i].Y = s.At.Seconds(), float64(s.RSSBytes-s.FileBytes)/(1<<20)
		charged[i].X, charged[i].Y = s.At.Seconds(), float64(s.CgroupBytes)/(1<<20)
		inCgroup = inCgroup || s.CgroupBytes > 0
	}
	lines := []any{"RSS", rss, "anonymous (RSS less file-backed pages)", anon}
	if inCgroup {
		lines = append(lines, "working set of its memory cgroup", charged)
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return nil, false
	}
	return p, true
}

func (r *Report) lagPlot() (*plot.Plot, bool) {
	if r.Cluster == nil || len(r.Cluster.LagSamples) < 2 {
		return nil, false
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = "End-to-end lag (object written → row in Postgres)", "seconds into churn", "lag (s)"
	pts := make(plotter.XYs, len(r.Cluster.LagSamples))
	for i, s := range r.Cluster.LagSamples {
		pts[i].X, pts[i].Y = s.At.Seconds(), s.Lag.Seconds()
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, false
	}
	p.Add(sc)
	return p, true
}

// commitLatencyPlot draws a fleet's Git export durations under contention:
// exports per latency bucket.
func (r *Report) commitLatencyPlot() (*plot.Plot, bool) {
	if r.Fleet == nil || len(r.Fleet.CommitLatency) == 0 {
		return nil, false
	}
	p := plot.New()
	p.Title.Text = "Git commit latency, clusters pushing to one branch"
	p.X.Label.Text, p.Y.Label.Text = "export duration, up to (s)", "exports"
	values := make(plotter.Values, len(r.Fleet.CommitLatency))
	names := make([]string, len(r.Fleet.CommitLatency))
	for i, b := range r.Fleet.CommitLatency {
		values[i], names[i] = b.Exports, b.LE
	}
	bars, err := plotter.NewBarChart(values, vg.Points(18))
	if err != nil {
		return nil, false
	}
	p.Add(bars)
	p.NominalX(names...)
	return p, true
}

// pushTimeline writes pushes as "-0.41: 9800, 0.62: 10000".
func pushTimeline(pushes []GitPush) string {
	parts := make([]string, 0, len(pushes))
	for _, p := range pushes {
		parts = append(parts, fmt.Sprintf("%.2f: %d", p.After.Seconds(), p.Files))
	}
	return strings.Join(parts, ", ")
}
