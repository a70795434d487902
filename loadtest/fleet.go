package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"kollect.dev/kollect/internal/servers/natstest"
	"kollect.dev/kollect/internal/servers/pgtest"
	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/pipeline/tools/manifests"
)

// FleetOptions shape a fleet run: the product's multi-cluster setup, one
// control plane and one operator process per cluster, every operator
// exporting to the same Git repository, PostgreSQL table and NATS stream
// with its own spec.cluster; no hub.
type FleetOptions struct {
	Binary string
	// Clusters is how many clusters (named a, b, c, …).
	Clusters int
	// Objects and Namespaces are per cluster (ConfigMaps).
	Objects    int
	Namespaces int
	// ChurnRate is changes per second in each cluster, for ChurnFor, once
	// every row arrived; DeleteShare of them delete their object (its next
	// change creates it again).
	ChurnRate   float64
	ChurnFor    time.Duration
	DeleteShare float64
	Log         func(format string, a ...any)
}

// FleetResult is what a fleet run measured.
type FleetResult struct {
	Clusters       []string      `json:"clusters"`
	Objects        int           `json:"objectsPerCluster"`
	CreateDuration time.Duration `json:"createDurationNs"`
	// AllIn is how long after the last create every cluster's rows were in
	// each sink (git, postgres, nats).
	AllIn   map[string]time.Duration `json:"allRowsAfterLastCreateNs"`
	Updates int                      `json:"updates"`
	Deletes int                      `json:"deletes"`
	Creates int                      `json:"recreates"`
	// Commits on the shared branch; GitExports the Git exports the
	// operators ran, GitConflicts the pushes another cluster beat (each
	// rebuilt on the new tip and pushed again); FailedExports the exports
	// of any sink that failed (their binding retried them later).
	Commits       int     `json:"gitCommits"`
	GitExports    float64 `json:"gitExports"`
	GitConflicts  float64 `json:"gitConflicts"`
	FailedExports float64 `json:"failedExports"`
	// CommitP50 and CommitP99 are the Git export durations (fetch, build,
	// push, rebuilds included) over every operator, from their histograms.
	CommitP50 time.Duration `json:"gitCommitP50Ns"`
	CommitP99 time.Duration `json:"gitCommitP99Ns"`
	// CommitLatency is that histogram, merged: exports per bucket (not
	// cumulative), by upper bound in seconds.
	CommitLatency []LatencyBucket `json:"gitCommitLatency"`
	// PostgresRows and NATSMessages are what the operators acknowledged
	// writing; the rates are over the run from the first create.
	PostgresRows       float64 `json:"postgresRowsWritten"`
	NATSMessages       float64 `json:"natsMessagesPublished"`
	PostgresRowsPerSec float64 `json:"postgresRowsPerSec"`
	NATSMessagesPerSec float64 `json:"natsMessagesPerSec"`
	// Wrong counts, per sink, rows missing, stale, extra or held under
	// another cluster at the end; zero is the only good figure.
	Wrong map[string]int `json:"rowsWrong"`
	// Diff describes the first differences, per sink and cluster.
	Diff []string `json:"diff,omitempty"`
}

// LatencyBucket is one bucket of a latency histogram.
type LatencyBucket struct {
	LE      string  `json:"le"` // upper bound in seconds, or +Inf
	Exports float64 `json:"exports"`
}

// fleetStream and fleetSubject are the shared NATS stream and subject.
const (
	fleetStream  = "kollect_events"
	fleetSubject = "inventory.events"
)

// member is one cluster of the fleet: its control plane, operator and what
// its objects hold.
type member struct {
	name string
	env  *testenv.Env
	op   *operator
	objs objects
	want map[string]string // object name → version ("" never: deleted objects are absent)
}

// RunFleet starts one control plane and operator per cluster and the
// shared sinks, creates the objects in every cluster at once, churns them
// all, and checks that each sink holds every cluster's rows, apart.
func RunFleet(ctx context.Context, o FleetOptions) (*FleetResult, error) {
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if o.Clusters < 1 || o.Clusters > 26 {
		return nil, fmt.Errorf("fleet: want 1 to 26 clusters, not %d", o.Clusters)
	}
	dir, err := os.MkdirTemp("", "kollect-fleet-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	pg, err := pgtest.New()
	if err != nil {
		return nil, err
	}
	defer pg.Close()
	bus, err := natstest.New()
	if err != nil {
		return nil, err
	}
	defer bus.Close()
	bare := filepath.Join(dir, "inventory.git")
	if out, err := exec.Command("git", "init", "--bare", "-q", "-b", "main", bare).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git init: %v: %s", err, out)
	}

	res := &FleetResult{Objects: o.Objects, AllIn: map[string]time.Duration{}, Wrong: map[string]int{}}
	members := make([]*member, o.Clusters)
	for i := range members {
		res.Clusters = append(res.Clusters, string(rune('a'+i)))
	}
	logf("starting %d control planes and operators (clusters %s)", o.Clusters, strings.Join(res.Clusters, ", "))
	err = eachMember(members, func(i int, _ *member) error {
		m, err := startMember(ctx, o, res.Clusters[i], filepath.Join(dir, res.Clusters[i]), "file://"+bare, pg.DSN(""), bus.URL())
		members[i] = m
		return err
	})
	defer func() {
		for _, m := range members {
			if m != nil {
				m.close()
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	db, err := pgx.Connect(ctx, pg.DSN(""))
	if err != nil {
		return nil, err
	}
	defer db.Close(context.Background())

	logf("creating %d ConfigMaps in each cluster at once", o.Objects)
	start := time.Now()
	if err := eachMember(members, func(_ int, m *member) error {
		return createObjects(ctx, m.env.Client, m.objs, 0, m.name+"-v0")
	}); err != nil {
		return nil, err
	}
	lastCreate := time.Now()
	res.CreateDuration = lastCreate.Sub(start)
	view := fleetView{bare: bare, db: db, nats: bus.URL()}
	for pending := []string{"git", "postgres", "nats"}; len(pending) > 0; time.Sleep(250 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("waiting for every cluster's rows in %v: %w", pending, err)
		}
		left := pending[:0]
		for _, sink := range pending {
			if n, err := view.count(ctx, sink); err == nil && n == o.Objects*o.Clusters {
				res.AllIn[sink] = time.Since(lastCreate)
				logf("every cluster's %d rows in %s %v after the last create", o.Objects, sink, res.AllIn[sink].Round(time.Millisecond))
				continue
			}
			left = append(left, sink)
		}
		pending = left
	}

	if o.ChurnRate > 0 && o.ChurnFor > 0 {
		logf("churning %.0f changes/s in each cluster for %v (%.0f%% deletes)", o.ChurnRate, o.ChurnFor, o.DeleteShare*100)
		var mu sync.Mutex
		if err := eachMember(members, func(_ int, m *member) error {
			u, d, c, err := m.churn(ctx, o)
			mu.Lock()
			res.Updates, res.Deletes, res.Creates = res.Updates+u, res.Deletes+d, res.Creates+c
			mu.Unlock()
			return err
		}); err != nil {
			return res, err
		}
	}

	// Every sink must come to hold exactly what every cluster holds.
	want := map[string]map[string]string{}
	for _, m := range members {
		want[m.name] = m.want
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		res.Diff = res.Diff[:0]
		for _, sink := range []string{"git", "postgres", "nats"} {
			got, err := view.read(ctx, sink)
			if err != nil {
				res.Wrong[sink], res.Diff = -1, append(res.Diff, fmt.Sprintf("%s: %v", sink, err))
				continue
			}
			n, diff := compareFleet(want, got)
			res.Wrong[sink] = n
			for _, d := range diff {
				res.Diff = append(res.Diff, sink+": "+d)
			}
		}
		if len(res.Diff) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
	}
	elapsed := time.Since(start).Seconds()
	res.Commits = len(gitLog(bare))
	var hist []bucket
	for _, m := range members {
		f, err := scrape(m.op.MetricsAddr)
		if err != nil {
			return res, fmt.Errorf("cluster %s: metrics: %w", m.name, err)
		}
		res.GitConflicts += metricSum(f, "kollect_export_conflicts_total", "sink_type", "git")
		res.PostgresRows += metricSum(f, "kollect_sink_written_total", "sink_type", "postgres")
		res.NATSMessages += metricSum(f, "kollect_sink_written_total", "sink_type", "nats")
		res.FailedExports += metricSum(f, "kollect_sink_errors_total", "", "")
		h, n := histogram(f, "kollect_export_duration_seconds", "sink_type", "git")
		hist, res.GitExports = mergeBuckets(hist, h), res.GitExports+n
	}
	res.CommitP50, res.CommitP99 = quantile(hist, 0.5), quantile(hist, 0.99)
	below := 0.0
	for _, b := range hist {
		res.CommitLatency = append(res.CommitLatency, LatencyBucket{LE: strconv.FormatFloat(b.le, 'g', -1, 64), Exports: b.count - below})
		below = b.count
	}
	res.PostgresRowsPerSec, res.NATSMessagesPerSec = res.PostgresRows/elapsed, res.NATSMessages/elapsed
	return res, nil
}

// eachMember runs f for every member at once and returns the first error.
func eachMember(members []*member, f func(i int, m *member) error) error {
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, m)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// startMember starts a cluster's control plane and operator and applies
// its pipeline, bound to the shared sinks as cluster name.
func startMember(ctx context.Context, o FleetOptions, name, dir, remote, dsn, natsURL string) (*member, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	env, err := testenv.Start()
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	m := &member{name: name, env: env, objs: newObjects(o.Objects, o.Namespaces, 0), want: map[string]string{}}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, name); err != nil {
		m.close()
		return nil, err
	}
	if m.op, err = startOperator(ctx, o.Binary, kubeconfig, dir, nil); err != nil {
		m.close()
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	for i := range o.Namespaces {
		if err := createNamespace(ctx, env.Client, loadNamespace(i), map[string]string{"loadtest": "yes"}); err != nil {
			m.close()
			return nil, err
		}
	}
	if err := createNamespace(ctx, env.Client, pipelineNamespace, nil); err != nil {
		m.close()
		return nil, err
	}
	text := strings.NewReplacer("{{NS}}", pipelineNamespace, "{{CLUSTER}}", name, "{{REMOTE}}", remote, "{{DSN}}", dsn,
		"{{NATS}}", natsURL, "{{SUBJECT}}", fleetSubject).Replace(fleetPipeline)
	objs, err := manifests.Decode(strings.NewReader(text))
	if err == nil {
		err = manifests.Apply(ctx, env.Client, "loadtest", objs)
	}
	if err != nil {
		m.close()
		return nil, fmt.Errorf("cluster %s: pipeline: %w", name, err)
	}
	// Ready once the inventory runs (its series appears), so the figures
	// that follow measure exports, not the operator's start.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		f, err := scrape(m.op.MetricsAddr)
		if err == nil && metricCount(f, "kollect_inventory_items", "inventory", pipelineNamespace+"/load") > 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			m.close()
			return nil, fmt.Errorf("cluster %s: the operator did not start the inventory within 2 minutes (%v); its log ends:\n%s", name, err, m.op.Tail(2000))
		}
	}
	for i := range o.Objects {
		m.want[m.objs.at(i).name] = name + "-v0"
	}
	return m, nil
}

func (m *member) close() {
	if m.op != nil {
		m.op.stop()
	}
	_ = m.env.Stop()
}

// churn changes the member's objects at the churn rate for the churn time:
// updates, and every deleteEvery-th change a delete (the object's next
// change creates it again).
func (m *member) churn(ctx context.Context, o FleetOptions) (updates, deletes, creates int, err error) {
	deleteEvery := 0
	if o.DeleteShare > 0 {
		deleteEvery = max(1, int(math.Round(1/o.DeleteShare)))
	}
	every := time.Duration(float64(time.Second) / o.ChurnRate)
	step := stride(o.Objects)
	start := time.Now()
	for k := 0; time.Since(start) < o.ChurnFor; k++ {
		if wait := time.Until(start.Add(every * time.Duration(k))); wait > 0 {
			time.Sleep(wait)
		}
		ob := m.objs.at(k * step % o.Objects)
		version := fmt.Sprintf("%s-v%d", m.name, k+1) // another cluster's version in a row is an overwrite
		_, present := m.want[ob.name]
		switch {
		case !present:
			err = ob.create(ctx, m.env.Client, version)
			m.want[ob.name], creates = version, creates+1
		case deleteEvery > 0 && k%deleteEvery == deleteEvery-1:
			err = ob.delete(ctx, m.env.Client)
			delete(m.want, ob.name)
			deletes++
		default:
			err = ob.update(ctx, m.env.Client, version)
			m.want[ob.name], updates = version, updates+1
		}
		if err != nil {
			return updates, deletes, creates, fmt.Errorf("cluster %s: %w", m.name, err)
		}
	}
	return updates, deletes, creates, nil
}

// fleetPipeline is one cluster's pipeline: its ConfigMaps, exported as
// cluster {{CLUSTER}} to the shared Git repository, table and stream.
const fleetPipeline = `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: configmaps, namespace: '{{NS}}'}
spec:
  targetGVK: {group: core, version: v1, kind: ConfigMap}
  attributes: [{name: version, path: '$.data.version'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: configmaps, namespace: '{{NS}}'}
spec:
  profileRef: configmaps
  namespaceSelector: {matchLabels: {loadtest: "yes"}}
  labelSelector: {matchLabels: {app: loadtest}}
---
apiVersion: v1
kind: Secret
metadata: {name: dsn, namespace: '{{NS}}'}
stringData: {dsn: '{{DSN}}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: git, namespace: '{{NS}}'}
spec:
  type: git
  cluster: '{{CLUSTER}}'
  endpoint: '{{REMOTE}}'
  layout: {mode: perResource, content: attributes}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: pg, namespace: '{{NS}}'}
spec:
  type: postgres
  cluster: '{{CLUSTER}}'
  postgres: {databaseRef: {name: dsn}, table: inventory_items}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectEventSink
metadata: {name: bus, namespace: '{{NS}}'}
spec:
  type: nats
  cluster: '{{CLUSTER}}'
  nats: {url: '{{NATS}}', subject: '{{SUBJECT}}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: load, namespace: '{{NS}}'}
spec:
  snapshotSinkRefs: [git]
  databaseSinkRefs: [pg]
  eventSinkRefs: [bus]`
