package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/internal/servers/pgtest"
)

// ClusterOptions shape a cluster-mode run.
type ClusterOptions struct {
	// Binary is the kollect binary run as the operator (its own process, so
	// its RSS and CPU are measured alone).
	Binary string
	// Kubeconfig names the cluster to load (its current context); empty
	// starts a local control plane for the run.
	Kubeconfig string
	Objects    int
	Namespaces int
	// DeploymentShare of the objects are Deployments (scaled to zero), the
	// rest ConfigMaps.
	DeploymentShare float64
	CreateRate      float64 // objects per second (0: as fast as the API server takes them)
	ChurnRate       float64 // changes per second after every row arrived
	ChurnFor        time.Duration
	// DeleteShare of the churn's changes delete their object; the object's
	// next change creates it again.
	DeleteShare float64
	// GitBursts objects are updated, deleted and created again in three
	// bursts once every row arrived (0: none).
	GitBursts int
	// OperatorProfile, when set, is a file for the operator's CPU profile
	// over the creates and the first rows' arrival (OperatorProfileFor).
	OperatorProfile    string
	OperatorProfileFor time.Duration
	// GoMemLimit, when set, is the operator's GOMEMLIMIT (instead of what
	// it sets from its container's memory limit in a pod).
	GoMemLimit string
	// MemoryLimit, when set, runs the operator in a memory cgroup with
	// this limit (a Kubernetes quantity), as a pod's limit does; the
	// operator sets its soft limit from it unless GoMemLimit is set.
	MemoryLimit string
	Log         func(format string, a ...any)
}

// ClusterResult is what a cluster-mode run measured.
type ClusterResult struct {
	Objects        int           `json:"objects"`
	Deployments    int           `json:"deployments"`
	CreateDuration time.Duration `json:"createDurationNs"`
	AllInGit       time.Duration `json:"allRowsInGitAfterLastCreateNs"`
	AllInPostgres  time.Duration `json:"allRowsInPostgresAfterLastCreateNs"`
	// GitPushes are the remote's pushes from 5 s before the last create
	// until the one that held every row.
	GitPushes      []GitPush          `json:"gitPushesAroundLastCreate"`
	GitBursts      []GitBurst         `json:"gitBursts,omitempty"`
	Updates        int                `json:"updates"`
	Deletes        int                `json:"deletes"`
	Creates        int                `json:"recreates"`
	LagP50, LagP95 time.Duration      `json:"-"`
	LagP99, LagMax time.Duration      `json:"-"`
	Lag            map[string]float64 `json:"lagSeconds"` // p50, p95, p99, max (object written → row in Postgres)
	LostPostgres   int                `json:"rowsLostOrStalePostgres"`
	LostGit        int                `json:"rowsLostOrStaleGit"`
	Duplicated     int                `json:"rowsDuplicated"`
	PeakRSSBytes   int64              `json:"operatorPeakRssBytes"`
	PeakAnonBytes  int64              `json:"operatorPeakAnonymousRssBytes"` // RSS less the executable's and other files' pages
	// Exports are each sink type's exports over the run (failed ones too).
	Exports map[string]ExportFigures `json:"exports"`
	// Cgroup is what the operator's memory cgroup recorded (with
	// MemoryLimit).
	Cgroup      *CgroupStats `json:"cgroup,omitempty"`
	OperatorCPU float64      `json:"operatorCpuSeconds"`
	// OperatorSystemCPU is the part of OperatorCPU the kernel spent on its
	// behalf (page faults, reclaim).
	OperatorSystemCPU float64            `json:"operatorSystemCpuSeconds"`
	MaxMailbox        map[string]float64 `json:"maxMailboxDepth"`
	Samples           []Sample           `json:"samples"`
	LagSamples        []LagSample        `json:"lagSamples"`
	// GoMemLimitBytes is the operator's soft memory limit, as it reports
	// it (go_gc_gomemlimit_bytes; math.MaxInt64 for none).
	GoMemLimitBytes int64 `json:"operatorGoMemLimitBytes"`
	// LiveHeapBytes is the operator's heap in use right after a garbage
	// collection once every row arrived and the exports settled: what it
	// keeps, without garbage or an export in flight.
	LiveHeapBytes int64 `json:"operatorLiveHeapBytes"`
	// HeapProfile is the operator's heap (pprof) at the same moment,
	// written beside the report as heap.pb.gz.
	HeapProfile []byte `json:"-"`
}

// LagSample is one change's end-to-end lag.
type LagSample struct {
	At     time.Duration `json:"at"`
	Lag    time.Duration `json:"lag"`
	Change string        `json:"change"` // update, delete or create
}

// RunCluster starts (or connects to) the API server, starts PostgreSQL and
// the operator, applies a pipeline exporting ConfigMaps and Deployments to
// Git and Postgres, creates the objects, churns them, and checks both sinks
// against the cluster.
func RunCluster(ctx context.Context, o ClusterOptions) (*ClusterResult, error) {
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	dir, err := os.MkdirTemp("", "kollect-loadtest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	api, err := connect(ctx, o.Kubeconfig, dir, logf)
	if err != nil {
		return nil, err
	}
	defer api.close()
	pg, err := pgtest.New()
	if err != nil {
		return nil, err
	}
	defer pg.Close()
	bare := filepath.Join(dir, "inventory.git")
	remoteLog, err := os.Create(filepath.Join(dir, "git-remote.log"))
	if err != nil {
		return nil, err
	}
	defer remoteLog.Close()
	remote, err := serveGit(bare, remoteLog)
	if err != nil {
		return nil, err
	}
	defer remote.close()
	var env []string
	if o.GoMemLimit != "" {
		env = append(env, "GOMEMLIMIT="+o.GoMemLimit)
	}
	cg, err := limitMemory(o.MemoryLimit, o.Binary)
	if err != nil {
		return nil, err
	}
	var wrap []string
	var charged func() int64
	if cg != nil {
		defer func() {
			if err := cg.remove(); err != nil {
				logf("%v", err)
			}
		}()
		wrap, charged = cg.wrap(), cg.workingSet
		logf("the operator runs in memory cgroup %s, limit %s", cg.dir, mib(cg.limit))
	}
	op, err := startOperator(ctx, o.Binary, api.kubeconfig, dir, wrap, env...)
	if err != nil {
		return nil, err
	}
	defer op.stop()
	c := api.client
	if err := applyPipeline(ctx, c, o.Namespaces, remote.url, pg.DSN("")); err != nil {
		return nil, err
	}

	objs := newObjects(o.Objects, o.Namespaces, o.DeploymentShare)
	res := &ClusterResult{Objects: o.Objects, Deployments: objs.deployments()}
	smp := startSampler(op.Cmd.Process.Pid, fromEndpoint(op.MetricsAddr), charged, 250*time.Millisecond)
	// An operator that exits (the kernel killed it at its memory limit)
	// fails the run at once, with what its cgroup recorded.
	exited := func() error {
		if !op.Exited() {
			return nil
		}
		if cg != nil {
			s := cg.stats()
			res.Cgroup = &s
			return fmt.Errorf("the operator exited: %d OOM kills in its memory cgroup (limit %s, peak %s)", s.OOMKills, mib(s.Limit), mib(s.Peak))
		}
		return fmt.Errorf("the operator exited: %s", op.Tail(2000))
	}
	logf("creating %d objects (%d Deployments, the rest ConfigMaps) in %d namespaces", o.Objects, res.Deployments, o.Namespaces)
	start := time.Now()
	profiled := make(chan struct{})
	if o.OperatorProfile != "" {
		go func() {
			defer close(profiled)
			p, err := op.cpuProfile(max(time.Second, o.OperatorProfileFor))
			if err == nil {
				err = os.WriteFile(o.OperatorProfile, p, 0o644)
			}
			if err != nil {
				logf("operator CPU profile: %v", err)
			}
		}()
	} else {
		close(profiled)
	}
	defer func() { <-profiled }()
	if err := createObjects(ctx, c, objs, o.CreateRate, "v0"); err != nil {
		return nil, err
	}
	lastCreate := time.Now()
	res.CreateDuration = lastCreate.Sub(start)
	want := map[string]string{}
	for i := range o.Objects {
		want[objs.at(i).name] = "v0"
	}
	db, err := pgx.Connect(ctx, pg.DSN(""))
	if err != nil {
		return nil, err
	}
	defer db.Close(context.Background())
	pgDone := false
	for !pgDone {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("waiting for every row: %w", err)
		}
		if err := exited(); err != nil {
			return res, err
		}
		if !pgDone {
			if n, _ := pgCount(ctx, db); n == o.Objects {
				res.AllInPostgres, pgDone = time.Since(lastCreate), true
				logf("all %d rows in Postgres %v after the last create", n, res.AllInPostgres.Round(time.Millisecond))
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Git's time is the remote's: when the push that held every row
	// landed, from its log of pushes, read once the exports went quiet.
	inGit, pushes, err := awaitPush(ctx, bare, lastCreate.Add(-5*time.Second), lastCreate, 5*time.Minute,
		func(v map[string]string) bool { return len(v) == o.Objects })
	res.GitPushes = pushes
	if err != nil {
		return res, fmt.Errorf("waiting for every row in Git: %w", err)
	}
	res.AllInGit = inGit.Sub(lastCreate)
	logf("all %d files in Git %v after the last create (%d pushes from 5 s before it)", o.Objects, res.AllInGit.Round(time.Millisecond), len(pushes))
	// The export that brought the last rows may still be storing what it
	// pushed in the Git mirror: the live heap is measured once the exports
	// settled, not with one in flight.
	exportsSettled(ctx, op.MetricsAddr, 3*time.Second, 30*time.Second)
	if res.HeapProfile, err = op.heapProfile(); err != nil {
		logf("%v", err)
	} else if live, err := scrapeGauge(op.MetricsAddr, "go_memstats_heap_alloc_bytes"); err == nil {
		res.LiveHeapBytes = int64(live) // read right after the profile's collection
	}
	if soft, err := scrapeGauge(op.MetricsAddr, "go_gc_gomemlimit_bytes"); err == nil {
		res.GoMemLimitBytes = int64(soft)
	}

	if o.GitBursts > 0 {
		if res.GitBursts, err = gitBursts(ctx, c, bare, objs, o.GitBursts, logf); err != nil {
			return res, err
		}
	}
	if o.ChurnRate > 0 && o.ChurnFor > 0 {
		logf("churning %.0f changes/s for %v (%.0f%% deletes)", o.ChurnRate, o.ChurnFor, o.DeleteShare*100)
		if err := churn(ctx, c, db, o, objs, want, res); err != nil {
			return res, err
		}
	}
	// Final check: both sinks hold exactly what the cluster holds.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res.LostPostgres, res.Duplicated = pgCompare(ctx, db, want)
		res.LostGit = gitCompare(bare, want)
		if res.LostPostgres+res.LostGit+res.Duplicated == 0 || time.Now().After(deadline) || ctx.Err() != nil || op.Exited() {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err := exited(); err != nil {
		return res, err
	}
	if f, err := scrape(op.MetricsAddr); err == nil {
		res.Exports = exportFigures(f)
	}
	if cg != nil {
		s := cg.stats()
		res.Cgroup = &s
	}
	res.Samples = smp.finish()
	res.PeakRSSBytes, res.PeakAnonBytes, res.MaxMailbox = peaks(res.Samples)
	if res.Cgroup != nil {
		res.Cgroup.PeakWorkingSet = peakWorkingSet(res.Samples)
	}
	if n := len(res.Samples); n > 0 {
		res.OperatorCPU, res.OperatorSystemCPU = res.Samples[n-1].CPUSeconds, res.Samples[n-1].SystemSeconds
	}
	return res, nil
}

// exportsSettled waits until the operator's count of exports has not
// changed for quiet, or for at most limit.
func exportsSettled(ctx context.Context, addr string, quiet, limit time.Duration) {
	count := func() float64 {
		f, err := scrape(addr)
		if err != nil {
			return -1
		}
		n := 0.0
		for _, e := range exportFigures(f) {
			n += e.Count
		}
		return n
	}
	last, since, deadline := count(), time.Now(), time.Now().Add(limit)
	for time.Since(since) < quiet && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(250 * time.Millisecond)
		if n := count(); n != last {
			last, since = n, time.Now()
		}
	}
}

// ExportFigures count a sink type's exports and how long they took
// (kollect_export_duration_seconds: p99 is capped at its top bucket, 10 s).
type ExportFigures struct {
	Count float64       `json:"count"`
	Mean  time.Duration `json:"meanSeconds"`
	P99   time.Duration `json:"p99Seconds"`
}

// exportFigures reads the figures of every sink type from a scrape.
func exportFigures(f map[string]*dto.MetricFamily) map[string]ExportFigures {
	out := map[string]ExportFigures{}
	for _, m := range f["kollect_export_duration_seconds"].GetMetric() {
		h := m.GetHistogram()
		fig := ExportFigures{Count: float64(h.GetSampleCount()), P99: quantile(buckets(h), 0.99)}
		if fig.Count > 0 {
			fig.Mean = time.Duration(h.GetSampleSum() / fig.Count * float64(time.Second))
		}
		for _, l := range m.GetLabel() {
			if l.GetName() == "sink_type" {
				out[l.GetValue()] = fig
			}
		}
	}
	return out
}

// createObjects creates the objects holding version with four workers at
// the target rate.
func createObjects(ctx context.Context, c client.Client, objs objects, rate float64, version string) error {
	return writeAll(ctx, objs.n, rate, func(i int) error { return objs.at(i).create(ctx, c, version) })
}

// writeAll calls write for 0 ≤ i < n with four writers, at rate writes
// per second (0: as fast as the API server takes them), and stops at the
// first error.
func writeAll(ctx context.Context, n int, rate float64, write func(i int) error) error {
	var every time.Duration
	if rate > 0 {
		every = time.Duration(float64(time.Second) / rate)
	}
	start := time.Now()
	work := make(chan int)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := write(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
	for i := 0; i < n && err == nil; i++ {
		if every > 0 {
			if wait := time.Until(start.Add(every * time.Duration(i))); wait > 0 {
				time.Sleep(wait)
			}
		}
		select {
		case work <- i:
		case err = <-errs:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	close(work)
	wg.Wait()
	select {
	case e := <-errs:
		err = e
	default:
	}
	return err
}
