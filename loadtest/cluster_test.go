package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"kollect.dev/kollect/internal/testenv"
)

// binDir holds the operator binary, built once for the package's tests.
var binDir string

var operatorBinary = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "kollect")
	build := exec.Command("go", "build", "-o", bin, operatorModule)
	build.Dir = ".." // the operator's own module
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the operator: %v\n%s", err, out)
	}
	return bin, nil
})

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "kollect-loadtest-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

func buildOperator(t *testing.T) string {
	t.Helper()
	bin, err := operatorBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func checkNothingLost(t *testing.T, res *ClusterResult) {
	t.Helper()
	if res.LostPostgres != 0 || res.LostGit != 0 || res.Duplicated != 0 {
		t.Fatalf("lost %d in Postgres, %d in Git, %d duplicated", res.LostPostgres, res.LostGit, res.Duplicated)
	}
}

// TestClusterModeLosesNothing: a short cluster run (a few hundred
// ConfigMaps and Deployments, a few seconds of updates, deletes and
// re-creates) ends with Git and Postgres holding exactly what the API
// server holds. Figures are logged, never asserted.
func TestClusterModeLosesNothing(t *testing.T) {
	bin := buildOperator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := RunCluster(ctx, ClusterOptions{Binary: bin, Objects: 300, Namespaces: 5, DeploymentShare: 0.2, CreateRate: 300,
		ChurnRate: 50, ChurnFor: 4 * time.Second, DeleteShare: 0.2, GitBursts: 50, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	checkNothingLost(t, res)
	// The remote's push log times Git: the last push of the creates held
	// every file, and each burst ended at a push that held its changes.
	if n := len(res.GitPushes); n == 0 || res.GitPushes[n-1].Files != 300 {
		t.Errorf("pushes around the last create: %+v; the last should hold all 300 files", res.GitPushes)
	}
	if len(res.GitBursts) != 3 {
		t.Fatalf("bursts %+v; want update, delete and create", res.GitBursts)
	}
	for _, b := range res.GitBursts {
		if b.Objects != 50 || len(b.Pushes) == 0 || b.Pushes[len(b.Pushes)-1].After < 0 {
			t.Errorf("%s burst: %+v; want 50 objects ending at a push after the last write", b.Change, b)
		}
	}
	if last := res.GitBursts[1].Pushes; last[len(last)-1].Files != 250 {
		t.Errorf("the delete burst ended at a push of %d files, want 250", last[len(last)-1].Files)
	}
	if res.Deployments != 60 || res.Updates == 0 || res.Deletes == 0 {
		t.Fatalf("want 60 Deployments and both updates and deletes; got %d Deployments, %d updates, %d deletes",
			res.Deployments, res.Updates, res.Deletes)
	}
	seen := map[string]int{}
	for _, l := range res.LagSamples {
		seen[l.Change]++
	}
	if seen[changeUpdate] == 0 || seen[changeDelete] == 0 {
		t.Fatalf("lag measured for %v; want updates and deletes", seen)
	}
	if res.LiveHeapBytes == 0 || res.HeapProfile == nil {
		t.Error("the operator's live heap and heap profile were not read")
	}
	// Git over smart HTTP from the harness (gitRemote), Postgres: both
	// exported, and the report read their exports from the operator.
	for _, sink := range []string{"git", "postgres"} {
		if e := res.Exports[sink]; e.Count == 0 || e.Mean <= 0 {
			t.Errorf("%s exports not read from the operator's metrics: %+v", sink, e)
		}
	}
	t.Logf("exports %+v", res.Exports)
	t.Logf("all rows: Git %v, Postgres %v after the last create; lag %v; peak RSS %d MiB, live heap %d MiB; mailboxes %v",
		res.AllInGit, res.AllInPostgres, res.Lag, res.PeakRSSBytes>>20, res.LiveHeapBytes>>20, res.MaxMailbox)
}

// TestClusterModeAgainstAKubeconfig runs against a cluster the harness did
// not start and that has no Kollect CRDs: the run installs them, loses
// nothing, and deletes the namespaces it created.
func TestClusterModeAgainstAKubeconfig(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cluster := &envtest.Environment{BinaryAssetsDirectory: filepath.Join(root, "bin", "envtest")}
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		cluster.BinaryAssetsDirectory = assets
	}
	cfg, err := cluster.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cluster.Stop() }()
	env := &testenv.Env{Config: cfg}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, "elsewhere"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := RunCluster(ctx, ClusterOptions{Binary: buildOperator(t), Kubeconfig: kubeconfig, Objects: 100, Namespaces: 2,
		DeploymentShare: 0.5, ChurnRate: 20, ChurnFor: 2 * time.Second, DeleteShare: 0.5, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	checkNothingLost(t, res)

	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = apiextensionsv1.AddToScheme(c.Scheme())
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: "kollectinventories.kollect.dev"}, &crd); err != nil {
		t.Errorf("the run did not install the CRDs: %v", err)
	}
	var nss corev1.NamespaceList
	if err := c.List(ctx, &nss, client.HasLabels{loadLabel}); err != nil {
		t.Fatal(err)
	}
	if len(nss.Items) != 3 { // two load namespaces and the pipeline's
		t.Fatalf("want the run's 3 namespaces, found %d", len(nss.Items))
	}
	for _, ns := range nss.Items {
		if ns.DeletionTimestamp == nil { // envtest has no namespace controller to finish the deletion
			t.Errorf("namespace %s was not deleted after the run", ns.Name)
		}
	}
	// A second run refuses to mix with what the first left behind.
	if _, err := RunCluster(ctx, ClusterOptions{Binary: "unused", Kubeconfig: kubeconfig, Objects: 1}); err == nil {
		t.Error("a run over a previous run's namespaces was not refused")
	}
}
