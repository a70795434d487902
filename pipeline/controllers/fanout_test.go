//go:build integration

package controllers_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"kollect.dev/kollect/internal/servers/azuretest"
	"kollect.dev/kollect/internal/servers/gcstest"
	"kollect.dev/kollect/internal/servers/gitlabtest"
	"kollect.dev/kollect/internal/servers/kafkatest"
	"kollect.dev/kollect/internal/servers/natstest"
	"kollect.dev/kollect/internal/servers/pgtest"
	"kollect.dev/kollect/internal/servers/s3test"
	"kollect.dev/kollect/sinks/events"
)

// images maps object name → image.
type images map[string]string

func (i images) String() string {
	keys := slices.Sorted(maps.Keys(i))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s ", k, i[k])
	}
	return b.String()
}

// gitImages reads the images the Git sink holds.
func gitImages(bare, ns string) (images, error) {
	out := images{}
	list, err := git(bare, "ls-tree", "-r", "--name-only", "main")
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, list)
	}
	for _, p := range strings.Fields(list) {
		body, err := git(bare, "show", "main:"+p)
		if err != nil {
			return nil, err
		}
		var attrs struct{ Image string }
		if err := yaml.Unmarshal([]byte(body), &attrs); err != nil {
			return nil, err
		}
		out[strings.TrimSuffix(filepath.Base(p), ".yaml")] = attrs.Image
	}
	return out, nil
}

func pgImages(ctx context.Context, dsn, invNS string) (images, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rs, err := conn.Query(ctx, `SELECT payload->>'name', payload->'attributes'->>'image' FROM inventory_items
WHERE inventory_namespace = $1 AND inventory_name = 'inventory' AND cluster = 'test' AND target_name = 'shop-deployments'`, invNS)
	if err != nil {
		return nil, err
	}
	out := images{}
	for rs.Next() {
		var name, image string
		if err := rs.Scan(&name, &image); err != nil {
			return nil, err
		}
		out[name] = image
	}
	return out, rs.Err()
}

// envelopeImages reads the images of an export envelope; a missing object
// is an empty inventory.
func envelopeImages(body []byte, found bool) (images, error) {
	out := images{}
	if !found {
		return out, nil
	}
	var env struct {
		Items []struct {
			Name       string         `json:"name"`
			Attributes map[string]any `json:"attributes"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, err
	}
	for _, it := range env.Items {
		out[it.Name] = fmt.Sprint(it.Attributes["image"])
	}
	return out, nil
}

type eventBody struct {
	Change string `json:"change"`
	Key    string `json:"key"`
	Row    struct {
		Name       string            `json:"name"`
		Attributes map[string]string `json:"attributes"`
	} `json:"row"`
}

// TestOnePipelineManySinks runs one pipeline of our own into Git, GitLab,
// S3, GCS, Azure, a real PostgreSQL, MongoDB (FerretDB), BigQuery (the
// fake), an embedded NATS JetStream and kfake: the same rows land in every
// sink, an image change becomes one commit, one row update and one
// message per stream, and a deleted object becomes a removed file, a
// deleted row, a delete marker and a tombstone.
func TestOnePipelineManySinks(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.Start(t)
	ns := natstest.Start(t)
	kf := kafkatest.Start(t)
	s3 := s3test.Start(t)
	if err := s3.CreateBucket("fanout"); err != nil {
		t.Fatal(err)
	}
	gcs := gcstest.Start(t)
	gcs.CreateBucket("fanout")
	az := azuretest.Start(t)
	if err := az.CreateContainer(ctx, "fanout"); err != nil {
		t.Fatal(err)
	}
	lab := gitlabtest.Start(t)
	lab.CreateProject("platform/fanout")
	dbs := startDatabases(t)
	bare := filepath.Join(t.TempDir(), "fanout.git")
	bareRepo(t, bare)

	apply(t, namespaceYAML("fanout", "")+"---\n"+namespaceYAML("fanout-apps", "team: fanout")+"---\n"+
		deploymentYAML("fanout-apps", "web", "shop", "web:1")+"---\n"+deploymentYAML("fanout-apps", "api", "shop", "api:1"))
	apply(t, strings.ReplaceAll(pipelineYAML("fanout", bare), "team: shop", "team: fanout")+fmt.Sprintf(`---
apiVersion: v1
kind: Secret
metadata: {name: dsn, namespace: fanout}
stringData: {dsn: '%s'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: warehouse, namespace: fanout}
spec:
  type: postgres
  cluster: test
  postgres: {databaseRef: {name: dsn}, table: inventory_items}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectEventSink
metadata: {name: bus, namespace: fanout}
spec:
  type: nats
  cluster: test
  nats: {url: '%s', subject: inventory.events}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectEventSink
metadata: {name: log, namespace: fanout}
spec:
  type: kafka
  cluster: test
  kafka: {brokers: ['%s'], topic: inventory.changes}
---
apiVersion: v1
kind: Secret
metadata: {name: s3-keys, namespace: fanout}
stringData: {accessKeyID: '%s', secretAccessKey: '%s'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata:
  name: bucket
  namespace: fanout
  annotations: {kollect.dev/allow-plain-http-credentials: "true"}
spec:
  type: s3
  endpoint: '%s/fanout'
  secretRef: {name: s3-keys}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: gcs, namespace: fanout}
spec:
  type: gcs
  endpoint: '%s/fanout/exports'
  serialization: {format: ndjson, compression: gzip}
---
apiVersion: v1
kind: Secret
metadata: {name: gitlab-token, namespace: fanout}
stringData: {token: '%s'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata:
  name: lab
  namespace: fanout
  annotations: {kollect.dev/allow-plain-http-credentials: "true"}
spec:
  type: gitlab
  endpoint: '%s/platform/fanout.git'
  secretRef: {name: gitlab-token}
  serialization: {format: json}
---
apiVersion: v1
kind: Secret
metadata: {name: azure-key, namespace: fanout}
stringData: {accountName: '%s', accountKey: '%s'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata:
  name: blob
  namespace: fanout
  annotations: {kollect.dev/allow-plain-http-credentials: "true"}
spec:
  type: azureblob
  endpoint: '%s/%s/fanout'
  secretRef: {name: azure-key}
  objectStore: {format: parquet}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: inventory, namespace: fanout}
spec:
  snapshotSinkRefs: [git, bucket, gcs, lab, blob]
  databaseSinkRefs: [warehouse, documents, analytics]
  eventSinkRefs: [bus, log]
`, pg.DSN(""), ns.URL(), kf.Brokers()[0], s3test.AccessKey, s3test.SecretKey, s3.URL, gcs.URL, gitlabtest.Token, lab.URL, azuretest.Account, azuretest.Key, az.URL, azuretest.Account)+
		dbs.sinksYAML("fanout"))

	natsMessages := func() []eventBody {
		ms, err := natstest.ReadAll(ctx, ns.URL(), "kollect_events")
		if err != nil {
			return nil
		}
		out := make([]eventBody, len(ms))
		for i, m := range ms {
			_ = json.Unmarshal(m.Data, &out[i])
		}
		return out
	}
	kafkaRecords := func() (upserts map[string]string, tombstones int, total int) {
		rs, err := kafkatest.ReadAll(ctx, kf.Brokers(), "inventory.changes")
		if err != nil {
			return nil, 0, 0
		}
		upserts = map[string]string{}
		for _, r := range rs {
			if r.Value == nil {
				tombstones++
				continue
			}
			var b eventBody
			_ = json.Unmarshal(r.Value, &b)
			upserts[b.Row.Name] = b.Row.Attributes["image"]
		}
		return upserts, tombstones, len(rs)
	}
	s3Images := func() (images, error) {
		objs, err := s3.Objects(ctx, "fanout", "")
		if err != nil {
			return nil, err
		}
		body, ok := objs["inventory/fanout/inventory.json"]
		if len(objs) > 0 && !ok {
			return nil, fmt.Errorf("bucket holds %d objects, not inventory/fanout/inventory.json", len(objs))
		}
		return envelopeImages(body, ok)
	}
	gcsImages := func() (images, error) {
		body, enc, err := gcs.Object("fanout", "exports/inventory/fanout/inventory.ndjson.gz")
		if err != nil {
			return images{}, nil
		}
		if enc != "gzip" {
			return nil, fmt.Errorf("gcs object Content-Encoding %q", enc)
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		plain, _ := io.ReadAll(zr)
		out := images{}
		for _, line := range strings.Split(strings.TrimSpace(string(plain)), "\n") {
			var r struct {
				Name       string         `json:"name"`
				Attributes map[string]any `json:"attributes"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				return nil, err
			}
			out[r.Name] = fmt.Sprint(r.Attributes["image"])
		}
		return out, nil
	}
	labImages := func() (images, error) {
		body, ok := lab.Files("platform/fanout", "main")["inventory/fanout/inventory.json"]
		return envelopeImages(body, ok)
	}
	azureObjects := func() (int, error) {
		c, err := az.Client()
		if err != nil {
			return 0, err
		}
		n := 0
		pager := c.NewListBlobsFlatPager("fanout", nil)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return 0, err
			}
			n += len(page.Segment.BlobItems)
		}
		return n, nil
	}
	same := func(want images) func() error {
		return func() error {
			g, err := gitImages(bare, "fanout-apps")
			if err != nil {
				return err
			}
			p, err := pgImages(ctx, pg.DSN(""), "fanout")
			if err != nil {
				return err
			}
			b, err := s3Images()
			if err != nil {
				return err
			}
			o, err := gcsImages()
			if err != nil {
				return err
			}
			l, err := labImages()
			if err != nil {
				return err
			}
			m, err := dbs.mongoImages(ctx, "fanout", "inventory")
			if err != nil {
				return err
			}
			q, err := dbs.bqImages("fanout", "inventory")
			if err != nil {
				return err
			}
			if g.String() != want.String() || p.String() != want.String() || b.String() != want.String() || o.String() != want.String() || l.String() != want.String() ||
				m.String() != want.String() || q.String() != want.String() {
				return fmt.Errorf("git %v, postgres %v, s3 %v, gcs %v, gitlab %v, mongodb %v, bigquery %v, want %v", g, p, b, o, l, m, q, want)
			}
			return nil
		}
	}
	eventually(t, 30*time.Second, "the same rows land in every snapshot and database sink", same(images{"api": "api:1", "web": "web:1"}))
	eventually(t, 20*time.Second, "one message per row on NATS and Kafka", func() error {
		if ms := natsMessages(); len(ms) != 2 {
			return fmt.Errorf("nats: %d messages", len(ms))
		}
		if up, _, total := kafkaRecords(); total != 2 || up["web"] != "web:1" {
			return fmt.Errorf("kafka: %d records %v", total, up)
		}
		return nil
	})
	eventually(t, 20*time.Second, "status reports what every sink acknowledged", func() error {
		inv := get(t, "KollectInventory", "fanout", "inventory")
		if s, r, m := condition(inv, "Ready"); s != "True" || r != "Exported" {
			return fmt.Errorf("Ready=%s/%s %s", s, r, m)
		}
		exports, _, _ := unstructured.NestedSlice(inv.Object, "status", "sinkExports")
		got := map[string]string{}
		for _, e := range exports {
			m := e.(map[string]any)
			got[fmt.Sprint(m["name"])] = fmt.Sprintf("%v/%v", m["exportedCount"], m["circuit"])
		}
		want := map[string]string{"snapshot/git": "2/Closed", "snapshot/bucket": "2/Closed", "snapshot/gcs": "2/Closed", "snapshot/lab": "2/Closed", "snapshot/blob": "2/Closed",
			"database/warehouse": "2/Closed", "database/documents": "2/Closed", "database/analytics": "2/Closed", "event/bus": "2/Closed", "event/log": "2/Closed"}
		if !maps.Equal(got, want) {
			return fmt.Errorf("sinkExports %v", got)
		}
		if s, _, m := condition(get(t, "KollectDatabaseSink", "fanout", "warehouse"), "ConnectionVerified"); s != "True" || m != "PostgreSQL ping succeeded" {
			return fmt.Errorf("database sink ConnectionVerified=%s %s", s, m)
		}
		for name, msg := range map[string]string{"documents": "MongoDB ping succeeded", "analytics": "BigQuery dataset metadata and dry-run query succeeded"} {
			if s, _, m := condition(get(t, "KollectDatabaseSink", "fanout", name), "ConnectionVerified"); s != "True" || m != msg {
				return fmt.Errorf("%s sink ConnectionVerified=%s %s", name, s, m)
			}
		}
		if s, _, m := condition(get(t, "KollectEventSink", "fanout", "bus"), "ConnectionVerified"); s != "True" {
			return fmt.Errorf("nats sink ConnectionVerified=%s %s", s, m)
		}
		for name, msg := range map[string]string{"bucket": "bucket reachable with these credentials", "gcs": "bucket reachable with these credentials",
			"lab": "GitLab project reachable with this token", "blob": "container reachable with these credentials"} {
			if s, _, m := condition(get(t, "KollectSnapshotSink", "fanout", name), "ConnectionVerified"); s != "True" || m != msg {
				return fmt.Errorf("%s sink ConnectionVerified=%s %s", name, s, m)
			}
		}
		return nil
	})

	var d appsv1.Deployment
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "fanout-apps", Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "web:2"
	if err := env.Client.Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the image change reaches Git and Postgres", same(images{"api": "api:1", "web": "web:2"}))
	eventually(t, 20*time.Second, "the image change is one message per stream", func() error {
		ms := natsMessages()
		if len(ms) != 3 || ms[2].Change != events.Upsert || ms[2].Row.Attributes["image"] != "web:2" {
			return fmt.Errorf("nats: %+v", ms)
		}
		if up, _, total := kafkaRecords(); total != 3 || up["web"] != "web:2" {
			return fmt.Errorf("kafka: %d records %v", total, up)
		}
		return nil
	})

	if err := env.Client.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "fanout-apps", Name: "api"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "a deleted object leaves Git and Postgres", same(images{"web": "web:2"}))
	eventually(t, 20*time.Second, "a deleted object is a delete marker and a tombstone", func() error {
		ms := natsMessages()
		if len(ms) != 4 || ms[3].Change != events.Delete || ms[3].Row.Name != "api" {
			return fmt.Errorf("nats: %+v", ms)
		}
		if _, tomb, total := kafkaRecords(); total != 4 || tomb != 1 {
			return fmt.Errorf("kafka: %d records, %d tombstones", total, tomb)
		}
		return nil
	})
	m := scrape(t)
	defer func() {
		// Deleting the inventory clears what it wrote in every sink
		// (the stance on upstream quirk Q13) before the finalizer goes.
		inv := &unstructured.Unstructured{}
		inv.SetAPIVersion("kollect.dev/v1alpha1")
		inv.SetKind("KollectInventory")
		inv.SetNamespace("fanout")
		inv.SetName("inventory")
		if err := env.Client.Delete(ctx, inv); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the deleted inventory's data is cleared and the inventory is gone", func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(inv), inv); err == nil {
				return fmt.Errorf("inventory still present (finalizers %v)", inv.GetFinalizers())
			}
			return same(images{})()
		})
		// The bucket keeps nothing of the inventory, manifest included.
		if objs, err := s3.Objects(ctx, "fanout", ""); err != nil || len(objs) != 0 {
			t.Errorf("s3 after deletion: %d objects (%v)", len(objs), err)
		}
		if n, err := azureObjects(); err != nil || n != 0 {
			t.Errorf("azure after deletion: %d blobs (%v)", n, err)
		}
		// GitLab: one commit per export, the last one removing the files.
		if files := lab.Files("platform/fanout", "main"); len(files) != 0 {
			t.Errorf("gitlab after deletion holds %d files: %v, commits %+v", len(files), slices.Sorted(maps.Keys(files)), lab.Commits("platform/fanout", "main"))
		}
		if ms := natsMessages(); len(ms) != 5 || ms[4].Change != events.Delete || !strings.Contains(ms[4].Key, "/Deployment/web#fanout/inventory/") {
			t.Errorf("nats after deletion: %+v", ms)
		}
		if _, tomb, _ := kafkaRecords(); tomb != 2 {
			t.Errorf("kafka after deletion: %d tombstones, want 2", tomb)
		}
	}()
	for _, series := range []string{`kollect_sink_written_total{binding="database/warehouse",inventory="fanout/inventory",sink_type="postgres"}`,
		`kollect_sink_last_success_timestamp_seconds{binding="event/bus",inventory="fanout/inventory"}`,
		`kollect_sink_consecutive_failures{binding="event/log",inventory="fanout/inventory"} 0`} {
		if !strings.Contains(m, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
}
