//go:build integration

package cli_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/internal/eventually"
	"kollect.dev/kollect/internal/servers/mongotest"
	"kollect.dev/kollect/internal/servers/pgtest"
	"kollect.dev/kollect/internal/servers/s3test"
	"kollect.dev/kollect/pipeline/tools/cli"
)

// syncBuffer is a bytes.Buffer safe for a writer and a poller.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, what string, ok func() bool) time.Duration {
	t.Helper()
	return eventually.True(t, 15*time.Second, what, ok)
}

func setImage(t *testing.T, ns, name, image string) {
	t.Helper()
	var d appsv1.Deployment
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = image
	if err := env.Client.Update(context.Background(), &d); err != nil {
		t.Fatal(err)
	}
}

// TestWatchReportsEachChange: --watch prints the first collection, then one
// line per row that changes, and stops cleanly when interrupted.
func TestWatchReportsEachChange(t *testing.T) {
	kubeconfig, dir := setup(t)
	live := deployment("cli-a", "live", "shop", "live:1")
	if err := env.Client.Create(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), live) })
	var out, errOut syncBuffer
	cmd := cli.NewCollectCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "-f", dir, "-o", "ndjson", "--watch"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	waitFor(t, "the watch to start", func() bool { return strings.Contains(errOut.String(), "watching for changes") })
	if n := strings.Count(out.String(), "\n"); n != 1 {
		t.Fatalf("first collection: %d lines\n%s", n, out.String())
	}
	setImage(t, "cli-a", "live", "live:2")
	took := waitFor(t, "the change to be printed", func() bool {
		return strings.Contains(out.String(), `"type":"upsert"`) && strings.Contains(out.String(), `"image":"live:2"`)
	})
	t.Logf("change printed %v after the update", took)
	setImage(t, "cli-b", "db", "db:2") // not selected: nothing printed
	setImage(t, "cli-a", "live", "live:3")
	waitFor(t, "the second change", func() bool { return strings.Contains(out.String(), `"image":"live:3"`) })
	if err := env.Client.Delete(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delete", func() bool { return strings.Contains(out.String(), `"type":"delete"`) })
	if strings.Contains(out.String(), "db:2") || strings.Count(out.String(), `"type":"upsert"`) != 2 {
		t.Errorf("want exactly the changes of selected rows:\n%s", out.String())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("watch ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch did not stop within 5s of the interrupt")
	}
}

// TestCollectToAGitSink: --sink writes one document per target to the
// repository, the Secret's ${env:VAR} values are read from the
// environment, and a missing variable is a clear error.
func TestCollectToAGitSink(t *testing.T) {
	kubeconfig, dir := setup(t)
	bare := filepath.Join(t.TempDir(), "inventory.git")
	if out, err := exec.Command("git", "init", "--bare", "-q", "-b", "main", bare).CombinedOutput(); err != nil {
		t.Fatal(string(out))
	}
	sinkFile := filepath.Join(t.TempDir(), "sink.yaml")
	if err := os.WriteFile(sinkFile, []byte(`apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: inventory-git, namespace: ops}
spec:
  type: git
  endpoint: file://`+bare+`
  cluster: lab
  pathTemplate: clusters/{cluster}/{namespace}/{name}.yaml
  secretRef: {name: git-credentials}
---
apiVersion: v1
kind: Secret
metadata: {name: git-credentials, namespace: ops}
stringData: {token: '${env:KOLLECT_TEST_GIT_TOKEN}'}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := run("--kubeconfig", kubeconfig, "-f", dir, "--sink", sinkFile)
	var exit *cli.ExitError
	if !errors.As(err, &exit) || exit.Code != 2 || !strings.Contains(err.Error(), "KOLLECT_TEST_GIT_TOKEN") {
		t.Fatalf("an unset variable: want exit 2 naming it, got %v", err)
	}
	t.Setenv("KOLLECT_TEST_GIT_TOKEN", "not-a-real-token")
	out, stderr, err := run("--kubeconfig", kubeconfig, "-f", dir, "--sink", sinkFile)
	if err != nil || !strings.Contains(out, "exported 1 target(s)") {
		t.Fatalf("collect --sink: %v\n%s\n%s", err, out, stderr)
	}
	show, err := exec.Command("git", "--git-dir", bare, "show", "main:clusters/lab/ops/shop.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(show), "web:") || !strings.Contains(string(show), "cart:2") {
		t.Fatalf("document: %v\n%s", err, show)
	}
	// The same collection again: the repository already holds it, no commit.
	if _, _, err := run("--kubeconfig", kubeconfig, "-f", dir, "--sink", sinkFile); err != nil {
		t.Fatal(err)
	}
	if n, _ := exec.Command("git", "--git-dir", bare, "rev-list", "--count", "main").Output(); strings.TrimSpace(string(n)) != "1" {
		t.Errorf("an unchanged collection made a commit: %s commits", n)
	}
}

// TestCollectToAPostgresSink: --sink goes through the operator's backend
// registry, so a database sink works as a Git sink does: the rows land in
// the table under the sink's cluster.
func TestCollectToAPostgresSink(t *testing.T) {
	kubeconfig, dir := setup(t)
	pg := pgtest.Start(t)
	sinkFile := filepath.Join(t.TempDir(), "sink.yaml")
	if err := os.WriteFile(sinkFile, []byte(`apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: warehouse, namespace: ops}
spec:
  type: postgres
  cluster: lab
  postgres: {databaseRef: {name: dsn}, table: cli_items}
---
apiVersion: v1
kind: Secret
metadata: {name: dsn, namespace: ops}
stringData: {dsn: '`+pg.DSN("postgres")+`'}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run("--kubeconfig", kubeconfig, "-f", dir, "--sink", sinkFile)
	if err != nil || !strings.Contains(out, "exported 1 target(s) to KollectDatabaseSink ops/warehouse (postgres") {
		t.Fatalf("collect --sink: %v\n%s\n%s", err, out, stderr)
	}
	conn, err := pgx.Connect(context.Background(), pg.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var names []string
	rs, err := conn.Query(context.Background(), `SELECT payload->>'name' FROM cli_items WHERE cluster = 'lab' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var n string
		_ = rs.Scan(&n)
		names = append(names, n)
	}
	if rs.Err() != nil || strings.Join(names, ",") != "cart,web" {
		t.Fatalf("rows in cli_items: %v %v; want the shop target's cart and web", names, rs.Err())
	}
}

// TestCollectToAMongoDBSink: a MongoDB sink file works with --sink as it
// does in the operator: one document per row, under the sink's cluster.
func TestCollectToAMongoDBSink(t *testing.T) {
	kubeconfig, dir := setup(t)
	srv := mongotest.Start(t)
	sinkFile := filepath.Join(t.TempDir(), "sink.yaml")
	if err := os.WriteFile(sinkFile, []byte(`apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: documents, namespace: ops}
spec:
  type: mongodb
  cluster: lab
  mongodb: {databaseRef: {name: uri}, database: inventory, collection: cli_items}
---
apiVersion: v1
kind: Secret
metadata: {name: uri, namespace: ops}
stringData: {uri: '`+srv.URI+`'}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run("--kubeconfig", kubeconfig, "-f", dir, "--sink", sinkFile)
	if err != nil || !strings.Contains(out, "exported 1 target(s) to KollectDatabaseSink ops/documents (mongodb") {
		t.Fatalf("collect --sink: %v\n%s\n%s", err, out, stderr)
	}
	ctx := context.Background()
	names, err := srv.Client(t).Database("inventory").Collection("cli_items").Distinct(ctx, "payload.name", bson.D{{Key: "cluster", Value: "lab"}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	vals, _ := names.Values()
	var got []string
	for _, v := range vals {
		got = append(got, v.StringValue())
	}
	slices.Sort(got)
	if strings.Join(got, ",") != "cart,web" {
		t.Fatalf("documents in cli_items: %v; want the shop target's cart and web", got)
	}
}

// TestCollectToAnS3Sink: kollect collect --sink s3-sink.yaml writes the
// envelope to the bucket, as the operator's s3 sink would.
func TestCollectToAnS3Sink(t *testing.T) {
	kubeconfig, dir := setup(t)
	s3 := s3test.Start(t)
	if err := s3.CreateBucket("inventory"); err != nil {
		t.Fatal(err)
	}
	sinkFile := filepath.Join(t.TempDir(), "s3-sink.yaml")
	if err := os.WriteFile(sinkFile, []byte(`apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata:
  name: bucket
  namespace: ops
  annotations: {kollect.dev/allow-plain-http-credentials: "true"}
spec:
  type: s3
  endpoint: `+s3.URL+`/inventory/lab
  secretRef: {name: keys}
  serialization: {format: ndjson}
---
apiVersion: v1
kind: Secret
metadata: {name: keys, namespace: ops}
stringData: {accessKeyID: `+s3test.AccessKey+`, secretAccessKey: `+s3test.SecretKey+`}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run("--kubeconfig", kubeconfig, "-f", dir, "--sink", sinkFile)
	if err != nil || !strings.Contains(out, "exported 1 target(s) to KollectSnapshotSink ops/bucket (s3") {
		t.Fatalf("collect --sink: %v\n%s\n%s", err, out, stderr)
	}
	objs, err := s3.Objects(context.Background(), "inventory", "lab/")
	if err != nil {
		t.Fatal(err)
	}
	body := string(objs["lab/inventory/ops/shop.ndjson"])
	if strings.Count(body, "\n") != 2 || !strings.Contains(body, `"web:1"`) || !strings.Contains(body, `"cart:2"`) {
		t.Fatalf("objects %v; shop.ndjson:\n%s", keysOf(objs), body)
	}
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
