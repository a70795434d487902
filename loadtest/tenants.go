package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kfake"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/internal/servers/pgtest"
	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/pipeline/tools/manifests"
)

// TenantsOptions shape a tenants run: many teams on one operator, each in
// its own namespace with its own profile, target and inventory, all bound
// to the same three servers (PostgreSQL, Kafka, a Git repository) through
// sinks of their own.
type TenantsOptions struct {
	Binary  string
	Tenants int
	// Objects in all (ConfigMaps), spread evenly over the tenants.
	Objects int
	// ChurnRate namespaces a second are created (and deleted 5 s later)
	// for ChurnFor once every inventory synced, while one team edits its
	// profile; none when either is zero.
	ChurnRate float64
	ChurnFor  time.Duration
	// OperatorArgs are more flags for the operator (an API budget).
	OperatorArgs []string
	Log          func(format string, a ...any)
}

// TenantsResult is what a tenants run measured.
type TenantsResult struct {
	Tenants int `json:"tenants"`
	Objects int `json:"objects"`
	// AllSynced is how long after the first pipeline was applied every
	// inventory had every sink acknowledged (Synced=True); SyncedBySink
	// the same per sink (status times have whole seconds).
	AllSynced    time.Duration            `json:"allSyncedNs"`
	SyncedBySink map[string]time.Duration `json:"syncedBySinkNs,omitempty"`
	// RestartAcked is how long after a restarted operator started every
	// binding of every inventory acknowledged an export again;
	// RestartAckedBySink is the same per sink (status times have whole
	// seconds).
	RestartAcked       time.Duration            `json:"restartAckedNs"`
	RestartAckedBySink map[string]time.Duration `json:"restartAckedBySinkNs,omitempty"`
	// PostgresConns is the most connections the operator held to the
	// PostgreSQL server, sampled, before and after the restart.
	PostgresConns        int `json:"postgresConnections"`
	PostgresConnsRestart int `json:"postgresConnectionsAfterRestart"`
	// PostgresRows are the rows the table holds at the end.
	PostgresRows int `json:"postgresRows"`
	// TopicBytesRead is what the restarted operator read back from the
	// Kafka topic until every binding acknowledged; TopicBytes what one
	// read of the whole topic costs (fetch responses, both).
	TopicBytesRead int64 `json:"topicBytesReadAfterRestart"`
	TopicBytes     int64 `json:"topicBytes"`
	// GitMirrors and GitMirrorBytes are the operator's Git mirrors.
	GitMirrors     int   `json:"gitMirrors"`
	GitMirrorBytes int64 `json:"gitMirrorBytes"`
	// Series is how many series the operator's /metrics serves at the
	// end; SeriesBeforeChurn and SeriesAfterChurn around the churn.
	Series            int `json:"metricSeries"`
	SeriesBeforeChurn int `json:"metricSeriesBeforeChurn,omitempty"`
	SeriesAfterChurn  int `json:"metricSeriesAfterChurn,omitempty"`
	// SecretReads are the Secret GETs and LISTs the API server served
	// while the inventories synced, during the churn, and after the
	// restart until every binding acknowledged.
	SecretReads [3]float64 `json:"secretReads"`
	// RestartRequests are the API server's busiest requests from the
	// restart until every binding acknowledged.
	RestartRequests []APIRequests `json:"restartRequests,omitempty"`
	// RestartTargetStatus and RestartInventoryStatus are the statuses the
	// restart changed, by field: an inventory's export times move (each
	// binding acknowledges anew); nothing else should.
	RestartTargetStatus    StatusChanges `json:"restartTargetStatus"`
	RestartInventoryStatus StatusChanges `json:"restartInventoryStatus"`
	// RestartNotSynced counts the inventory versions stored between the
	// restart and the last acknowledgement whose Synced condition was not
	// True, by status/reason: none, when a restart changes nothing.
	RestartNotSynced map[string]int `json:"restartNotSynced,omitempty"`
	// ControlPlaneCPU is the CPU seconds the local API server and etcd
	// used over the same three spans: they share the machine with the
	// operator (0 against a real cluster).
	ControlPlaneCPU [3]float64 `json:"controlPlaneCPUSeconds"`
	// Churn is what the namespace churn measured, when there was one.
	Churn *churnResult `json:"churn,omitempty"`
	// TargetStatusBytes is the largest target status, as JSON.
	TargetStatusBytes int `json:"targetStatusBytes"`
	// PeakRSS and CPUSeconds are the operator's, over the whole run.
	PeakRSS    int64    `json:"peakRSSBytes"`
	CPUSeconds float64  `json:"cpuSeconds"`
	Samples    []Sample `json:"samples,omitempty"`
	// HeapProfile is the operator's heap (pprof) once every inventory
	// synced, before the restart: what each tenant costs.
	HeapProfile []byte `json:"-"`
	// RestartHeapProfile is the restarted operator's, once every binding
	// acknowledged: its allocations are those of the recovery.
	RestartHeapProfile []byte `json:"-"`
	// SlowRestartGoroutines is the restarted operator's goroutine dump a
	// minute after the restart, taken only when some binding had not
	// acknowledged by then: what it waited on.
	SlowRestartGoroutines []byte `json:"-"`
	// RestartCPUProfile is the restarted operator's CPU profile over its
	// first minute (or until every binding acknowledged, if sooner).
	RestartCPUProfile []byte `json:"-"`
}

// APIRequests is how many requests of one verb and resource the API
// server served.
type APIRequests struct {
	Request string  `json:"request"`
	Count   float64 `json:"count"`
}

// RunTenants applies every tenant's pipeline, waits until every binding is
// acknowledged, restarts the operator and waits again, and measures what
// grows with the number of tenants.
func RunTenants(ctx context.Context, o TenantsOptions) (*TenantsResult, error) {
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	dir, err := os.MkdirTemp("", "kollect-tenants-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	pg, err := pgtest.New()
	if err != nil {
		return nil, err
	}
	defer pg.Close()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, err
	}
	defer kc.Close()
	broker := kc.ListenAddrs()[0]
	bare := filepath.Join(dir, "inventory.git")
	if out, err := exec.Command("git", "init", "--bare", "-q", "-b", "main", bare).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git init: %v: %s", err, out)
	}
	env, err := testenv.Start()
	if err != nil {
		return nil, err
	}
	defer func() { _ = env.Stop() }()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, "tenants"); err != nil {
		return nil, err
	}
	op, err := startOperatorWith(ctx, o.Binary, kubeconfig, dir, nil, o.OperatorArgs)
	if err != nil {
		return nil, err
	}
	defer func() { op.stop() }()
	db, err := harnessConn(ctx, pg.DSN(""), "loadtest-harness")
	if err != nil {
		return nil, err
	}
	defer db.Close(context.Background())
	conns := &connSampler{dsn: pg.DSN("")}
	stopConns, err := conns.start(ctx)
	if err != nil {
		return nil, err
	}

	res := &TenantsResult{Tenants: o.Tenants, Objects: o.Objects}
	smp := startSampler(op.Cmd.Process.Pid, fromEndpoint(op.MetricsAddr), nil, time.Second)
	cp0 := controlPlaneCPU()
	reqs0, err := apiRequests(ctx, env.Config)
	if err != nil {
		return nil, err
	}
	logf("applying %d tenants' pipelines (each: profile, target, inventory, Postgres, Kafka and Git sinks) and %d ConfigMaps", o.Tenants, o.Objects)
	start := time.Now()
	objs := newObjects(o.Objects, o.Tenants, 0)
	for i := range o.Tenants {
		ns := loadNamespace(i)
		if err := createNamespace(ctx, env.Client, ns, nil); err != nil {
			return nil, err
		}
		text := strings.NewReplacer("{{NS}}", ns, "{{DSN}}", pg.DSN(""), "{{BROKER}}", broker,
			"{{REMOTE}}", "file://"+bare).Replace(tenantPipeline)
		objects, err := manifests.Decode(strings.NewReader(text))
		if err == nil {
			err = manifests.Apply(ctx, env.Client, "loadtest", objects)
		}
		if err != nil {
			return nil, fmt.Errorf("tenant %s: %w", ns, err)
		}
	}
	if err := createObjects(ctx, env.Client, objs, 0, "v0"); err != nil {
		return nil, err
	}
	// Synced says an export was acknowledged, not that it held every
	// object: the restart below must find nothing left to do, so each
	// inventory is waited for until every sink holds its team's objects.
	want := objs.perNamespace()
	if err := waitInventories(ctx, env.Client, o.Tenants, 10*time.Minute, func(u *unstructured.Unstructured) bool {
		return condition(u, "Synced") == "True" && exportedAll(u, want[u.GetNamespace()])
	}); err != nil {
		return res, fmt.Errorf("every inventory synced: %w (operator log ends: %s)", err, op.Tail(2000))
	}
	res.AllSynced = time.Since(start)
	if res.SyncedBySink, err = lastAcks(ctx, env.Client, start); err != nil {
		return res, err
	}
	reqs1, err := apiRequests(ctx, env.Config)
	if err != nil {
		return res, err
	}
	res.SecretReads[0] = secretReads(reqs1) - secretReads(reqs0)
	cp1 := controlPlaneCPU()
	res.ControlPlaneCPU[0] = cp1 - cp0
	res.PostgresConns = conns.reset()
	logf("every tenant's inventory synced %v after the first pipeline was applied (by sink %v); at most %d Postgres connections",
		res.AllSynced.Round(time.Millisecond), res.SyncedBySink, res.PostgresConns)

	if res.HeapProfile, err = op.heapProfile(); err != nil {
		logf("%v", err)
	}
	if o.ChurnRate > 0 && o.ChurnFor > 0 {
		res.SeriesBeforeChurn = series(op.MetricsAddr)
		logf("churning %.0f namespaces a second for %v; %s edits its profile a quarter of the way in", o.ChurnRate, o.ChurnFor, loadNamespace(0))
		team := loadNamespace(0)
		rows := 0
		for i := range objs.n {
			if objs.at(i).namespace == team {
				rows++
			}
		}
		c, err := namespaceChurn{c: env.Client, dsn: pg.DSN(""), rate: o.ChurnRate, churnFor: o.ChurnFor, team: team, rows: rows, metrics: op.MetricsAddr, profile: op.cpuProfile, logf: logf}.run(ctx)
		if err != nil {
			return res, fmt.Errorf("namespace churn: %w", err)
		}
		res.Churn = &c
		reqs2, err := apiRequests(ctx, env.Config)
		if err != nil {
			return res, err
		}
		res.SecretReads[1], reqs1 = secretReads(reqs2)-secretReads(reqs1), reqs2
		cp2 := controlPlaneCPU()
		res.ControlPlaneCPU[1], cp1 = cp2-cp1, cp2
		res.SeriesAfterChurn = series(op.MetricsAddr)
		logf("the profile edit reached every row of its team %v after it was made; largest target status %d bytes; /metrics series %d before, %d after, %d naming a deleted namespace",
			c.EditTook.Round(time.Millisecond), c.StatusBytes, res.SeriesBeforeChurn, res.SeriesAfterChurn, c.SeriesOfGone)
	}

	before, err := readStatuses(ctx, env.Client)
	if err != nil {
		return res, err
	}
	flips, err := watchInventoryConditions(ctx, env.Config)
	if err != nil {
		return res, err
	}
	logf("restarting the operator")
	op.stop()
	restarted := time.Now()
	if op, err = startOperatorWith(ctx, o.Binary, kubeconfig, dir, nil, o.OperatorArgs); err != nil {
		return res, err
	}
	smp2 := startSampler(op.Cmd.Process.Pid, fromEndpoint(op.MetricsAddr), nil, time.Second)
	profiled := make(chan []byte, 1)
	go func() {
		p, _ := op.cpuProfile(time.Minute)
		profiled <- p
	}()
	dumped := make(chan []byte, 1)
	slow := time.AfterFunc(time.Minute, func() {
		dump, _ := op.goroutines()
		dumped <- dump
	})
	if err := waitInventories(ctx, env.Client, o.Tenants, 10*time.Minute, func(u *unstructured.Unstructured) bool {
		return exportedSince(u, restarted)
	}); err != nil {
		return res, fmt.Errorf("every binding acknowledged after the restart: %w", err)
	}
	res.RestartAcked = time.Since(restarted)
	if !slow.Stop() {
		res.SlowRestartGoroutines = <-dumped
	}
	if res.RestartAcked > time.Minute {
		res.RestartCPUProfile = <-profiled // the whole minute was the restart's
	}
	reqs3, err := apiRequests(ctx, env.Config)
	if err != nil {
		return res, err
	}
	res.SecretReads[2] = secretReads(reqs3) - secretReads(reqs1)
	res.RestartRequests = busiest(reqs1, reqs3, 8)
	res.ControlPlaneCPU[2] = controlPlaneCPU() - cp1
	if res.RestartAckedBySink, err = lastAcks(ctx, env.Client, restarted); err != nil {
		return res, err
	}
	if res.RestartHeapProfile, err = op.heapProfile(); err != nil {
		logf("%v", err)
	}
	after, err := readStatuses(ctx, env.Client)
	if err != nil {
		return res, err
	}
	res.RestartNotSynced = flips.finish()
	res.RestartTargetStatus = diffStatuses(before.targets, after.targets)
	res.RestartInventoryStatus = diffStatuses(before.inventories, after.inventories)
	logf("statuses the restart changed: targets %v; inventories %v; inventory versions not Synced meanwhile %v\n%s\n%s", res.RestartTargetStatus, res.RestartInventoryStatus,
		res.RestartNotSynced, res.RestartTargetStatus.Examples(), res.RestartInventoryStatus.Examples())
	if res.TopicBytesRead, err = readBack(op.MetricsAddr, "kafka"); err != nil {
		return res, fmt.Errorf("read back: %w", err)
	}
	if res.TopicBytes, err = topicBytes(ctx, broker, "inventory"); err != nil {
		return res, fmt.Errorf("read the topic: %w", err)
	}
	logf("the restarted operator read back %d bytes of the topic; one read of it is %d", res.TopicBytesRead, res.TopicBytes)
	res.PostgresConnsRestart = conns.reset()
	stopConns()
	logf("every binding acknowledged %v after the restart; at most %d Postgres connections; API server and etcd CPU %.1f s meanwhile",
		res.RestartAcked.Round(time.Millisecond), res.PostgresConnsRestart, res.ControlPlaneCPU[2])

	// Synced says the last export was acknowledged, not that it held the
	// last object created: the table gets a minute to hold every row.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if err := db.QueryRow(ctx, `SELECT count(*) FROM inventory_items`).Scan(&res.PostgresRows); err != nil {
			return res, err
		}
		if res.PostgresRows == o.Objects || time.Now().After(deadline) {
			break
		}
	}
	res.Series = series(op.MetricsAddr)
	res.GitMirrors, res.GitMirrorBytes = mirrors(filepath.Join(dir, "mirrors"))
	res.TargetStatusBytes, err = largestStatus(ctx, env.Client, "KollectTargetList")
	if err != nil {
		return res, err
	}
	res.Samples = append(smp.finish(), smp2.finish()...)
	res.PeakRSS, _, _ = peaks(res.Samples)
	res.CPUSeconds = lastCPU(res.Samples)
	if res.PostgresRows != o.Objects {
		return res, fmt.Errorf("the table holds %d rows, want %d; by inventory: %s", res.PostgresRows, o.Objects, shortInventories(ctx, db, objs, o.Tenants))
	}
	return res, nil
}

// series counts the series the operator's /metrics serves (0 when it
// cannot be read).
func series(addr string) int {
	n := 0
	if f, err := scrape(addr); err == nil {
		for _, mf := range f {
			n += len(mf.GetMetric())
		}
	}
	return n
}

// shortInventories names the inventories whose rows in the table differ
// from their namespace's objects, with both counts.
func shortInventories(ctx context.Context, db *pgx.Conn, objs objects, tenants int) string {
	want := map[string]int{}
	for i := range objs.n {
		want[objs.at(i).namespace]++
	}
	got := map[string]int{}
	rs, err := db.Query(ctx, `SELECT inventory_namespace, count(*) FROM inventory_items GROUP BY inventory_namespace`)
	if err != nil {
		return err.Error()
	}
	for rs.Next() {
		var ns string
		var n int
		if rs.Scan(&ns, &n) == nil {
			got[ns] = n
		}
	}
	rs.Close()
	var out []string
	for i := range tenants {
		if ns := loadNamespace(i); got[ns] != want[ns] {
			out = append(out, fmt.Sprintf("%s holds %d of %d", ns, got[ns], want[ns]))
		}
	}
	return strings.Join(out, ", ")
}

// lastCPU adds the CPU seconds of the two operator processes: each
// sampler's last reading is its process's total.
func lastCPU(samples []Sample) float64 {
	total, last := 0.0, 0.0
	for _, s := range samples {
		if s.CPUSeconds < last { // the second process's first reading
			total += last
		}
		last = s.CPUSeconds
	}
	return total + last
}

// harnessConn connects to the PostgreSQL server as the harness, under an
// application name starting with "loadtest-", which the connection
// sampler does not count.
func harnessConn(ctx context.Context, dsn, name string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = name
	return pgx.ConnectConfig(ctx, cfg)
}

// connSampler samples the client connections the PostgreSQL server holds
// for its database (not its autovacuum workers, nor the harness's own),
// and keeps the peak. It queries on a connection of its own: a pgx.Conn
// serves one goroutine, and one cancelled mid-query is closed.
type connSampler struct {
	dsn  string
	mu   sync.Mutex
	peak int
}

func (c *connSampler) start(ctx context.Context) (stop func(), err error) {
	db, err := harnessConn(ctx, c.dsn, "loadtest-sampler")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer db.Close(context.Background())
		for ctx.Err() == nil {
			var n int
			if err := db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = 'postgres' AND backend_type = 'client backend' AND application_name NOT LIKE 'loadtest-%'`).Scan(&n); err == nil {
				c.mu.Lock()
				c.peak = max(c.peak, n)
				c.mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return func() { cancel(); <-done }, nil
}

// reset returns the peak since the last reset.
func (c *connSampler) reset() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.peak
	c.peak = 0
	return p
}

// waitInventories polls every KollectInventory until n of them satisfy ok.
func waitInventories(ctx context.Context, c client.Client, n int, limit time.Duration, ok func(*unstructured.Unstructured) bool) error {
	deadline := time.Now().Add(limit)
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "kollect.dev", Version: "v1alpha1", Kind: "KollectInventoryList"})
		err := c.List(ctx, list)
		done := 0
		if err == nil {
			for i := range list.Items {
				if ok(&list.Items[i]) {
					done++
				}
			}
			if done == n {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%d of %d inventories after %v (%v)", done, n, limit, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func condition(u *unstructured.Unstructured, typ string) string {
	status, _ := conditionOf(u, typ)
	return status
}

// conditionOf is the status and reason of u's condition typ ("" when it
// has none).
func conditionOf(u *unstructured.Unstructured, typ string) (status, reason string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			status, _ = m["status"].(string)
			reason, _ = m["reason"].(string)
			return status, reason
		}
	}
	return "", ""
}

// everyBinding reports whether u has its three sink exports and ok holds
// for each.
func everyBinding(u *unstructured.Unstructured, ok func(export map[string]any) bool) bool {
	exports, _, _ := unstructured.NestedSlice(u.Object, "status", "sinkExports")
	if len(exports) != 3 {
		return false
	}
	for _, e := range exports {
		if m, _ := e.(map[string]any); !ok(m) {
			return false
		}
	}
	return true
}

// exportedSince reports whether every binding of u acknowledged an export
// after t. Status times have whole seconds: an export in t's second may
// be the previous process's, so only a later second counts.
func exportedSince(u *unstructured.Unstructured, t time.Time) bool {
	return everyBinding(u, func(m map[string]any) bool {
		at, _ := m["lastExportTime"].(string)
		ts, err := time.Parse(time.RFC3339, at)
		return err == nil && !ts.Before(t.Truncate(time.Second).Add(time.Second))
	})
}

// exportedAll reports whether every binding of u acknowledged an export of
// n rows.
func exportedAll(u *unstructured.Unstructured, n int) bool {
	return everyBinding(u, func(m map[string]any) bool {
		count, _ := m["exportedCount"].(int64)
		return count == int64(n)
	})
}

// lastAcks is, per sink name, how long after since the last inventory's
// binding to it acknowledged its export.
func lastAcks(ctx context.Context, c client.Client, since time.Time) (map[string]time.Duration, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "kollect.dev", Version: "v1alpha1", Kind: "KollectInventoryList"})
	if err := c.List(ctx, list); err != nil {
		return nil, err
	}
	out := map[string]time.Duration{}
	for _, u := range list.Items {
		exports, _, _ := unstructured.NestedSlice(u.Object, "status", "sinkExports")
		for _, e := range exports {
			m, _ := e.(map[string]any)
			name, _ := m["name"].(string)
			at, _ := m["lastExportTime"].(string)
			if ts, err := time.Parse(time.RFC3339, at); err == nil {
				out[name] = max(out[name], ts.Sub(since.Truncate(time.Second)))
			}
		}
	}
	return out, nil
}

// mirrors counts the Git mirrors under dir and their bytes.
func mirrors(dir string) (int, int64) {
	n, size := 0, int64(0)
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == "objects" {
			n++
		}
		if info, err := d.Info(); err == nil && !d.IsDir() {
			size += info.Size()
		}
		return nil
	})
	return n, size
}

// largestStatus is the size of the largest status of kind's objects.
func largestStatus(ctx context.Context, c client.Client, listKind string) (int, error) {
	all, err := statuses(ctx, c, listKind)
	if err != nil {
		return 0, err
	}
	largest := 0
	for _, st := range all {
		b, _ := json.Marshal(st)
		largest = max(largest, len(b))
	}
	return largest, nil
}

// tenantPipeline is one team's pipeline in its own namespace: its
// ConfigMaps, exported through sinks of its own to the servers every team
// shares.
const tenantPipeline = `apiVersion: kollect.dev/v1alpha1
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
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: '{{NS}}'}}
  labelSelector: {matchLabels: {app: loadtest}}
---
apiVersion: v1
kind: Secret
metadata: {name: dsn, namespace: '{{NS}}'}
stringData: {dsn: '{{DSN}}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: pg, namespace: '{{NS}}'}
spec:
  type: postgres
  postgres: {databaseRef: {name: dsn}, table: inventory_items}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectEventSink
metadata: {name: log, namespace: '{{NS}}'}
spec:
  type: kafka
  kafka: {brokers: ['{{BROKER}}'], topic: inventory}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: git, namespace: '{{NS}}'}
spec:
  type: git
  endpoint: '{{REMOTE}}'
  layout: {mode: perResource, content: attributes}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: team, namespace: '{{NS}}'}
spec:
  snapshotSinkRefs: [git]
  databaseSinkRefs: [pg]
  eventSinkRefs: [log]`

// apiRequests reads the API server's request counters since it started,
// from its own metrics, keyed "VERB resource[/subresource]".
func apiRequests(ctx context.Context, cfg *rest.Config) (map[string]float64, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the API server's metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	counts := map[string]float64{}
	for _, m := range mfs["apiserver_request_total"].GetMetric() {
		var resource, sub, verb string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "resource":
				resource = l.GetValue()
			case "subresource":
				sub = l.GetValue()
			case "verb":
				verb = l.GetValue()
			}
		}
		key := verb + " " + resource
		if sub != "" {
			key += "/" + sub
		}
		counts[key] += m.GetCounter().GetValue()
	}
	return counts, nil
}

// secretReads are the Secret GETs and LISTs among counts.
func secretReads(counts map[string]float64) float64 {
	return counts["GET secrets"] + counts["LIST secrets"]
}

// busiest are the requests counted between before and after, most first,
// at most n of them.
func busiest(before, after map[string]float64, n int) []APIRequests {
	var out []APIRequests
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out = append(out, APIRequests{Request: k, Count: d})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Request < out[j].Request
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
