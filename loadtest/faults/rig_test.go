package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/internal/servers/azuretest"
	"kollect.dev/kollect/internal/servers/bqtest"
	"kollect.dev/kollect/internal/servers/gcstest"
	"kollect.dev/kollect/internal/servers/gitlabtest"
	"kollect.dev/kollect/internal/servers/kafkatest"
	"kollect.dev/kollect/internal/servers/mongotest"
	"kollect.dev/kollect/internal/servers/natstest"
	"kollect.dev/kollect/internal/servers/pgtest"
	"kollect.dev/kollect/internal/servers/s3test"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/pipeline/tools/manifests"
)

var (
	env        *testenv.Env
	binary     string
	kubeconfig string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kollect-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if binary, err = testenv.BuildOperator(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	func() {
		defer os.RemoveAll(dir)
		e, err := testenv.Start()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return
		}
		defer func() { _ = e.Stop() }()
		env = e
		kubeconfig = filepath.Join(dir, "kubeconfig")
		if err := e.WriteKubeconfig(kubeconfig, "faults"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return
		}
		code = m.Run()
		if err := writeReport(os.Getenv("KOLLECT_FAULTS_REPORT")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}()
	os.Exit(code)
}

// objects is how many ConfigMaps each scenario exports: 1,000 in make
// test (ten sinks each), more with KOLLECT_FAULTS_OBJECTS (make faults).
func objects() int {
	if n, err := strconv.Atoi(os.Getenv("KOLLECT_FAULTS_OBJECTS")); err == nil && n > 0 {
		return n
	}
	return 1000
}

const (
	stream = "kollect_events"
	topic  = "inventory.changes"
)

// rig is one pipeline (a namespace of ConfigMaps, a target, an inventory
// bound to all ten backends: Git, GitLab, S3, GCS, Azure Blob, PostgreSQL,
// MongoDB, BigQuery, NATS and Kafka) and the operator process that runs
// it.
type rig struct {
	t    *testing.T
	ns   string
	dir  string
	bare string
	// remote is the Git endpoint the sink is given: a symbolic link to
	// bare, which an outage removes. A repository renamed away during a
	// push would break the push's own git process (its lock files are
	// absolute paths) and leave a lock behind, a fault of the test, not
	// of a remote that is unreachable for a while.
	remote string
	pg     *pgtest.Server
	db     *pgx.Conn
	nats   *natstest.Server
	kafka  *kafkatest.Cluster
	s3     *s3test.Server
	// s3proxy is the S3 sink's endpoint: it passes every request to s3
	// unless a scenario makes it fail some.
	s3proxy *sinktest.FaultProxy
	gcs     *gcstest.Server
	az      *azuretest.Server
	lab     *gitlabtest.Server
	mongo   *mongotest.Server
	bq      *bqtest.Server
	bqKey   []byte
	op      *testenv.Process
	args    []string
	// client, when set, is where write and put go (another cluster).
	client client.Client
	// seeding marks the first export, which the report tells apart.
	seeding bool
}

func newRig(t *testing.T, ns string, args ...string) *rig {
	t.Helper()
	r := &rig{t: t, ns: ns, dir: t.TempDir(), pg: pgtest.Start(t), nats: natstest.Start(t), kafka: kafkatest.Start(t), s3: s3test.Start(t),
		gcs: gcstest.Start(t), az: azuretest.Start(t), lab: gitlabtest.Start(t), mongo: mongotest.Start(t), bq: bqtest.Start(t),
		args: append([]string{"--leader-elect=false", "--export-batch-window=100ms", "--status-flush-interval=200ms", "--zap-log-level=info", "--enable-pprof"}, args...)}
	r.bare, r.remote = filepath.Join(r.dir, "inventory.git"), filepath.Join(r.dir, "remote.git")
	if err := os.Symlink(r.bare, r.remote); err != nil {
		t.Fatal(err)
	}
	if err := r.s3.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	proxy, err := sinktest.NewFaultProxy(r.s3.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	r.s3proxy = proxy
	r.gcs.CreateBucket(bucket)
	if err := r.az.CreateContainer(context.Background(), bucket); err != nil {
		t.Fatal(err)
	}
	r.lab.CreateProject(labProject)
	r.bq.CreateDataset(bqProject, bqDataset, "")
	r.bqKey = r.bq.ServiceAccount(bqProject, "kollect@faults.iam.gserviceaccount.com")
	if out, err := exec.Command("git", "init", "--bare", "-q", "-b", "main", r.bare).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	db, err := pgx.Connect(context.Background(), r.pg.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	r.db = db
	t.Cleanup(func() {
		if t.Failed() && r.op != nil && !r.op.Exited() {
			// Before the teardown: what the operator's exports were doing
			// when the scenario gave up.
			g, err := r.op.Goroutines(func(stack string) bool {
				return strings.Contains(stack, "kollect.dev/kollect/sinks") || strings.Contains(stack, "kollect.dev/kollect/actors/sink")
			})
			t.Logf("operator goroutines in sinks (err %v):\n%s", err, g)
		}
		if r.op != nil && !r.op.Exited() {
			r.teardown()
			_, _ = r.op.Stop(10 * time.Second)
		}
		if t.Failed() && r.op != nil {
			t.Logf("operator warnings and errors (last 60, every start):\n%s", r.op.Warnings(60))
			t.Logf("operator log (end):\n%s", r.op.Tail(6000))
		}
		db.Close(context.Background())
	})
	return r
}

// teardown deletes the pipeline while the operator runs (its finalizers
// need it), so later scenarios' operators do not export it.
func (r *rig) teardown() {
	ctx := context.Background()
	for _, kind := range []string{"KollectInventory", "KollectTarget"} {
		u := kollect(kind, r.ns, map[string]string{"KollectInventory": "inventory", "KollectTarget": "configmaps"}[kind])
		if err := env.Client.Delete(ctx, u); err != nil {
			continue
		}
		gone := false
		for deadline := time.Now().Add(time.Minute); !gone && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			gone = env.Client.Get(ctx, client.ObjectKeyFromObject(u), u) != nil
		}
		if !gone {
			// Its cleanup still runs when the scenario's servers stop, and
			// then never ends: every later scenario's operator (they share
			// the API server) would reconcile it. Let it go.
			r.t.Logf("%s %s/%s still deleting after a minute; its finalizers are removed", kind, r.ns, u.GetName())
			u.SetFinalizers(nil)
			_ = env.Client.Update(ctx, u)
		}
	}
}

// start runs a new operator process.
func (r *rig) start() {
	r.t.Helper()
	op, err := testenv.StartProcess(context.Background(), testenv.ProcessOptions{Binary: binary, Kubeconfig: kubeconfig,
		Log: filepath.Join(r.dir, "operator.log"), Env: []string{"KOLLECT_GIT_MIRROR_DIR=" + filepath.Join(r.dir, "mirrors")}, Args: r.args,
		AddrFlags: []string{"--pprof-bind-address"}})
	if err != nil {
		r.t.Fatal(err)
	}
	r.op = op
}

const pipeline = `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: configmaps, namespace: {{NS}}}
spec:
  targetGVK: {group: core, version: v1, kind: ConfigMap}
  attributes: [{name: version, path: '$.data.version'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: configmaps, namespace: {{NS}}}
spec:
  profileRef: configmaps
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: {{NS}}}}
  labelSelector: {matchLabels: {app: faults}}
---
apiVersion: v1
kind: Secret
metadata: {name: dsn, namespace: {{NS}}}
stringData: {dsn: '{{DSN}}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: git, namespace: {{NS}}}
spec:
  type: git
  endpoint: 'file://{{BARE}}'
  layout: {mode: perResource, content: attributes}
---
apiVersion: v1
kind: Secret
metadata: {name: s3-keys, namespace: {{NS}}}
stringData: {accessKeyID: '{{S3KEY}}', secretAccessKey: '{{S3SECRET}}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata:
  name: bucket
  namespace: {{NS}}
  annotations: {kollect.dev/allow-plain-http-credentials: "true"}
spec:
  type: s3
  endpoint: '{{S3}}/` + bucket + `'
  secretRef: {name: s3-keys}
  layout: {mode: perResource}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: pg, namespace: {{NS}}}
spec:
  type: postgres
  postgres: {databaseRef: {name: dsn}, table: inventory_items}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectEventSink
metadata: {name: bus, namespace: {{NS}}}
spec:
  type: nats
  nats: {url: '{{NATS}}', subject: inventory.events}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectEventSink
metadata: {name: log, namespace: {{NS}}}
spec:
  type: kafka
  kafka: {brokers: ['{{KAFKA}}'], topic: ` + topic + `}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: gcs, namespace: {{NS}}}
spec:
  type: gcs
  endpoint: '{{GCS}}/` + bucket + `'
  layout: {mode: perResource}
---
apiVersion: v1
kind: Secret
metadata: {name: azure-key, namespace: {{NS}}}
stringData: {accountName: '{{AZACCOUNT}}', accountKey: '{{AZKEY}}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata:
  name: blob
  namespace: {{NS}}
  annotations: {kollect.dev/allow-plain-http-credentials: "true"}
spec:
  type: azureblob
  endpoint: '{{AZ}}/{{AZACCOUNT}}/` + bucket + `'
  secretRef: {name: azure-key}
---
apiVersion: v1
kind: Secret
metadata: {name: gitlab-token, namespace: {{NS}}}
stringData: {token: '{{LABTOKEN}}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata:
  name: lab
  namespace: {{NS}}
  annotations: {kollect.dev/allow-plain-http-credentials: "true"}
spec:
  type: gitlab
  endpoint: '{{LAB}}/` + labProject + `.git'
  secretRef: {name: gitlab-token}
  layout: {mode: perResource, content: attributes}
---
apiVersion: v1
kind: Secret
metadata: {name: mongo-uri, namespace: {{NS}}}
stringData: {uri: '{{MONGO}}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: documents, namespace: {{NS}}}
spec:
  type: mongodb
  mongodb: {databaseRef: {name: mongo-uri}, database: inventory, collection: items}
---
apiVersion: v1
kind: Secret
metadata: {name: bigquery-key, namespace: {{NS}}}
stringData: {credentials.json: {{BQKEY}}}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata:
  name: analytics
  namespace: {{NS}}
  annotations: {kollect.dev/allow-plain-http-credentials: "true"}
spec:
  type: bigquery
  endpoint: '{{BQ}}'
  bigquery: {project: ` + bqProject + `, dataset: ` + bqDataset + `, table: inventory_items, secretRef: {name: bigquery-key}}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: inventory, namespace: {{NS}}}
spec:
  snapshotSinkRefs: [git, bucket, gcs, blob, lab]
  databaseSinkRefs: [pg, documents, analytics]
  eventSinkRefs: [bus, log]
`

// apply creates the namespace and the pipeline.
func (r *rig) apply() {
	r.t.Helper()
	r.applyTo(env.Client)
}

// applyTo creates the namespace and the pipeline through c (another
// cluster's API server: the same pipeline on the same sinks).
func (r *rig) applyTo(c client.Client) {
	r.t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}); client.IgnoreAlreadyExists(err) != nil {
		r.t.Fatal(err)
	}
	bqKey, _ := json.Marshal(string(r.bqKey))
	text := strings.NewReplacer("{{NS}}", r.ns, "{{DSN}}", r.pg.DSN(""), "{{BARE}}", r.remote, "{{NATS}}", r.nats.URL(),
		"{{KAFKA}}", r.kafka.Brokers()[0],
		"{{S3}}", r.s3proxy.URL, "{{S3KEY}}", s3test.AccessKey, "{{S3SECRET}}", s3test.SecretKey,
		"{{GCS}}", r.gcs.URL, "{{AZ}}", r.az.URL, "{{AZACCOUNT}}", azuretest.Account, "{{AZKEY}}", azuretest.Key,
		"{{LAB}}", r.lab.URL, "{{LABTOKEN}}", gitlabtest.Token, "{{MONGO}}", r.mongo.URI,
		"{{BQ}}", r.bq.URL, "{{BQKEY}}", string(bqKey)).Replace(pipeline)
	objs, err := manifests.Decode(strings.NewReader(text))
	if err != nil {
		r.t.Fatal(err)
	}
	if err := manifests.Apply(ctx, c, "faults", objs); err != nil {
		r.t.Fatal(err)
	}
}

func name(i int) string { return fmt.Sprintf("cm-%05d", i) }

// write creates or updates ConfigMaps [from, to) with version, eight
// writers at a time; it returns what the cluster now holds for them.
func (r *rig) write(ctx context.Context, from, to int, version string) error {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := from + w; i < to; i += 8 {
				if err := r.put(ctx, name(i), version); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func (r *rig) put(ctx context.Context, n, version string) error {
	return r.putLabelled(ctx, n, "faults", version)
}

// putLabelled creates or updates ConfigMap n with label app: app, which
// the target of that label collects.
func (r *rig) putLabelled(ctx context.Context, n, app, version string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: n, Labels: map[string]string{"app": app}},
		Data: map[string]string{"version": version}}
	err := r.cluster().Create(ctx, cm)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		return err
	}
	var cur corev1.ConfigMap
	if err := r.cluster().Get(ctx, client.ObjectKeyFromObject(cm), &cur); err != nil {
		return err
	}
	cur.Data = cm.Data
	return r.cluster().Update(ctx, &cur)
}

// cluster is the API server the rig writes ConfigMaps to: the shared one
// unless a scenario points it at another cluster.
func (r *rig) cluster() client.Client {
	if r.client != nil {
		return r.client
	}
	return env.Client
}

// kollect names a kollect.dev object of kind.
func kollect(kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "kollect.dev", Version: "v1alpha1", Kind: kind})
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// inventoryStatus reads the inventory's status.
func (r *rig) inventoryStatus() (map[string]any, error) {
	u := kollect("KollectInventory", r.ns, "inventory")
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(u), u); err != nil {
		return nil, err
	}
	st, _ := u.Object["status"].(map[string]any)
	return st, nil
}

// bindings is how many sinks the pipeline's inventory exports to.
const bindings = 10

// exportedSince reports whether every binding acknowledged an export at or
// after t (status reports acknowledgements only).
func (r *rig) exportedSince(t time.Time) error {
	st, err := r.inventoryStatus()
	if err != nil {
		return err
	}
	exports, _ := st["sinkExports"].([]any)
	if len(exports) != bindings {
		return fmt.Errorf("%d sinkExports, want %d", len(exports), bindings)
	}
	for _, e := range exports {
		m, _ := e.(map[string]any)
		at, _ := m["lastExportTime"].(string)
		ts, err := time.Parse(time.RFC3339, at)
		if err != nil || ts.Before(t.Truncate(time.Second)) {
			return fmt.Errorf("%v: last export %q is before %s", m["name"], at, t.Format(time.RFC3339))
		}
	}
	return nil
}

// reconnect opens a new Postgres connection (after a server restart).
func (r *rig) reconnect(ctx context.Context) {
	r.t.Helper()
	r.db.Close(ctx)
	db, err := pgx.Connect(ctx, r.pg.DSN(""))
	if err != nil {
		r.t.Fatal(err)
	}
	r.db = db
}
