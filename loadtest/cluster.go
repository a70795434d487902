package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/pipeline/manifests"
	"kollect.dev/kollect/pipeline/testenv"
	"kollect.dev/kollect/sinks/postgres/pgtest"
)

// ClusterOptions shape a cluster-mode run on a local control plane.
type ClusterOptions struct {
	// Binary is the kollect binary run as the operator (its own process, so
	// its RSS and CPU are measured alone).
	Binary     string
	Objects    int
	Namespaces int
	CreateRate float64 // objects per second (0: as fast as the API server takes them)
	ChurnRate  float64 // updates per second after every row arrived
	ChurnFor   time.Duration
	Log        func(format string, a ...any)
}

// ClusterResult is what a cluster-mode run measured.
type ClusterResult struct {
	Objects        int                `json:"objects"`
	CreateDuration time.Duration      `json:"createDurationNs"`
	AllInGit       time.Duration      `json:"allRowsInGitAfterLastCreateNs"`
	AllInPostgres  time.Duration      `json:"allRowsInPostgresAfterLastCreateNs"`
	Updates        int                `json:"updates"`
	LagP50, LagP95 time.Duration      `json:"-"`
	LagP99, LagMax time.Duration      `json:"-"`
	Lag            map[string]float64 `json:"lagSeconds"` // p50, p95, p99, max (object written → row in Postgres)
	LostPostgres   int                `json:"rowsLostOrStalePostgres"`
	LostGit        int                `json:"rowsLostOrStaleGit"`
	Duplicated     int                `json:"rowsDuplicated"`
	PeakRSSBytes   int64              `json:"operatorPeakRssBytes"`
	OperatorCPU    float64            `json:"operatorCpuSeconds"`
	MaxMailbox     map[string]float64 `json:"maxMailboxDepth"`
	Samples        []Sample           `json:"samples"`
	LagSamples     []LagSample        `json:"lagSamples"`
	// HeapProfile is the operator's heap (pprof) once every row arrived,
	// written beside the report as heap.pb.gz.
	HeapProfile []byte `json:"-"`
}

// LagSample is one change's end-to-end lag.
type LagSample struct {
	At  time.Duration `json:"at"`
	Lag time.Duration `json:"lag"`
}

// RunCluster starts etcd, kube-apiserver, PostgreSQL and the operator,
// applies a ConfigMap pipeline exporting to Git and Postgres, creates the
// objects, churns them, and checks both sinks against the cluster.
func RunCluster(ctx context.Context, o ClusterOptions) (*ClusterResult, error) {
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	env, err := testenv.Start()
	if err != nil {
		return nil, err
	}
	defer env.Stop()
	pg, err := pgtest.New()
	if err != nil {
		return nil, err
	}
	defer pg.Close()
	dir, err := os.MkdirTemp("", "kollect-loadtest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bare := filepath.Join(dir, "inventory.git")
	if out, err := exec.Command("git", "init", "--bare", "-q", "-b", "main", bare).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git init: %v: %s", err, out)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, "loadtest"); err != nil {
		return nil, err
	}
	op, err := startOperator(ctx, o.Binary, kubeconfig, dir)
	if err != nil {
		return nil, err
	}
	defer op.stop()
	c := env.Client
	if err := applyPipeline(ctx, c, o.Namespaces, "file://"+bare, pg.DSN("")); err != nil {
		return nil, err
	}

	res := &ClusterResult{Objects: o.Objects}
	smp := startSampler(op.cmd.Process.Pid, fromEndpoint(op.metrics), 250*time.Millisecond)
	logf("creating %d ConfigMaps in %d namespaces", o.Objects, o.Namespaces)
	start := time.Now()
	if err := createObjects(ctx, c, o); err != nil {
		return nil, err
	}
	lastCreate := time.Now()
	res.CreateDuration = lastCreate.Sub(start)
	want := map[string]string{}
	for i := range o.Objects {
		want[objName(i)] = "v0"
	}
	db, err := pgx.Connect(ctx, pg.DSN(""))
	if err != nil {
		return nil, err
	}
	defer db.Close(context.Background())
	gitDone, pgDone := false, false
	for !(gitDone && pgDone) {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("waiting for every row: %w", err)
		}
		if !pgDone {
			if n, _ := pgCount(ctx, db); n == o.Objects {
				res.AllInPostgres, pgDone = time.Since(lastCreate), true
				logf("all %d rows in Postgres %v after the last create", n, res.AllInPostgres.Round(time.Millisecond))
			}
		}
		if !gitDone {
			if n, _ := gitFileCount(bare); n == o.Objects {
				res.AllInGit, gitDone = time.Since(lastCreate), true
				logf("all %d files in Git %v after the last create", n, res.AllInGit.Round(time.Millisecond))
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if res.HeapProfile, err = op.heapProfile(); err != nil {
		logf("%v", err)
	}

	if o.ChurnRate > 0 && o.ChurnFor > 0 {
		logf("churning %.0f updates/s for %v", o.ChurnRate, o.ChurnFor)
		if err := churn(ctx, c, db, o, want, res); err != nil {
			return res, err
		}
	}
	// Final check: both sinks hold exactly what the cluster holds.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res.LostPostgres, res.Duplicated = pgCompare(ctx, db, want)
		res.LostGit = gitCompare(bare, want)
		if res.LostPostgres+res.LostGit+res.Duplicated == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	res.Samples = smp.finish()
	res.PeakRSSBytes, res.MaxMailbox = peaks(res.Samples)
	if n := len(res.Samples); n > 0 {
		res.OperatorCPU = res.Samples[n-1].CPUSeconds
	}
	return res, nil
}

func objName(i int) string { return fmt.Sprintf("load-%06d", i) }

func objNamespace(i, namespaces int) string { return fmt.Sprintf("load-%03d", i%namespaces) }

func applyPipeline(ctx context.Context, c client.Client, namespaces int, remote, dsn string) error {
	for i := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: objNamespace(i, namespaces), Labels: map[string]string{"loadtest": "yes"}}}
		if err := c.Create(ctx, ns); err != nil {
			return err
		}
	}
	objs, err := manifests.Decode(strings.NewReader(strings.ReplaceAll(strings.ReplaceAll(pipeline, "{{REMOTE}}", remote), "{{DSN}}", dsn)))
	if err != nil {
		return err
	}
	return manifests.Apply(ctx, c, "loadtest", objs)
}

const pipeline = `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: configmaps, namespace: default}
spec:
  targetGVK: {group: core, version: v1, kind: ConfigMap}
  attributes: [{name: version, path: '$.data.version'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: load, namespace: default}
spec:
  profileRef: configmaps
  namespaceSelector: {matchLabels: {loadtest: "yes"}}
  labelSelector: {matchLabels: {app: loadtest}}
---
apiVersion: v1
kind: Secret
metadata: {name: dsn, namespace: default}
stringData: {dsn: '{{DSN}}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: git, namespace: default}
spec:
  type: git
  endpoint: '{{REMOTE}}'
  layout: {mode: perResource, content: attributes}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: pg, namespace: default}
spec:
  type: postgres
  postgres: {databaseRef: {name: dsn}, table: inventory_items}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: load, namespace: default}
spec:
  snapshotSinkRefs: [git]
  databaseSinkRefs: [pg]`

// createObjects creates the ConfigMaps with four workers at the target rate.
func createObjects(ctx context.Context, c client.Client, o ClusterOptions) error {
	var every time.Duration
	if o.CreateRate > 0 {
		every = time.Duration(float64(time.Second) / o.CreateRate)
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
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: objNamespace(i, o.Namespaces), Name: objName(i),
					Labels: map[string]string{"app": "loadtest"}}, Data: map[string]string{"version": "v0"}}
				if err := c.Create(ctx, cm); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
	for i := 0; i < o.Objects && err == nil; i++ {
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

// churn updates objects round-robin at the churn rate and measures, for
// every update, the time until Postgres shows it.
func churn(ctx context.Context, c client.Client, db *pgx.Conn, o ClusterOptions, want map[string]string, res *ClusterResult) error {
	every := time.Duration(float64(time.Second) / o.ChurnRate)
	start := time.Now()
	type pending struct {
		version string
		at      time.Time
	}
	var mu sync.Mutex
	waiting := map[string]pending{}
	var lags []time.Duration
	done := make(chan struct{})
	go func() { // watch Postgres for the updates
		defer close(done)
		for {
			mu.Lock()
			n := len(waiting)
			mu.Unlock()
			finished := time.Since(start) > o.ChurnFor
			if finished && n == 0 || ctx.Err() != nil || time.Since(start) > o.ChurnFor+2*time.Minute {
				return
			}
			got, _, err := pgVersions(ctx, db)
			seen := time.Now()
			if err == nil {
				mu.Lock()
				for name, p := range waiting {
					if got[name] == p.version {
						lags = append(lags, seen.Sub(p.at))
						res.LagSamples = append(res.LagSamples, LagSample{At: p.at.Sub(start), Lag: seen.Sub(p.at)})
						delete(waiting, name)
					}
				}
				mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	// Eight writers, fed at the churn rate: one writer alone is bounded by
	// the API server's round trip.
	type update struct {
		i       int
		version string
	}
	work := make(chan update, 64)
	var wg sync.WaitGroup
	var writeErr error
	var errOnce sync.Once
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				name := objName(u.i)
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: objNamespace(u.i, o.Namespaces), Name: name}}
				patch := []byte(fmt.Sprintf(`{"data":{"version":%q}}`, u.version))
				mu.Lock()
				waiting[name] = pending{version: u.version, at: time.Now()} // a newer update supersedes an unseen one
				mu.Unlock()
				if err := c.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", patch)); err != nil {
					errOnce.Do(func() { writeErr = fmt.Errorf("update %s: %w", name, err) })
				}
			}
		}()
	}
	for u := 0; time.Since(start) < o.ChurnFor && ctx.Err() == nil; u++ {
		if wait := time.Until(start.Add(every * time.Duration(u))); wait > 0 {
			time.Sleep(wait)
		}
		// Objects are spread so that the eight writers never race on one.
		i := u % o.Objects
		version := fmt.Sprintf("v%d", u+1)
		want[objName(i)] = version
		work <- update{i: i, version: version}
		res.Updates++
	}
	close(work)
	wg.Wait()
	if writeErr != nil {
		return writeErr
	}
	<-done
	sort.Slice(lags, func(a, b int) bool { return lags[a] < lags[b] })
	res.Lag = map[string]float64{}
	if n := len(lags); n > 0 {
		q := func(p float64) time.Duration { return lags[min(n-1, int(p*float64(n)))] }
		res.LagP50, res.LagP95, res.LagP99, res.LagMax = q(0.50), q(0.95), q(0.99), lags[n-1]
		res.Lag = map[string]float64{"p50": res.LagP50.Seconds(), "p95": res.LagP95.Seconds(), "p99": res.LagP99.Seconds(), "max": res.LagMax.Seconds()}
	}
	return nil
}
