//go:build integration

package demo_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"kollect.dev/kollect/internal/demo"
	"kollect.dev/kollect/internal/sinktest"
)

// TestDemoStory runs `make demo`'s path on the API server alone (the
// controller-manager, scheduler and kwok are left to `make demo`): the
// pipeline exports, the image change and the scale-up become a commit with
// exactly that diff, and nothing is left running.
func TestDemoStory(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	duckdb, err := sinktest.CachedTool("duckdb-current")
	if err != nil {
		t.Fatal(err)
	}
	res, err := demo.Run(ctx, demo.Options{Dir: t.TempDir() + "/demo", Out: &out, DuckDB: duckdb})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if res.Commits < 2 {
		t.Errorf("%d commits, want the first export and the change", res.Commits)
	}
	story := out.String()
	for _, want := range []string{"+image: ghcr.io/example/storefront:1.5.0", "-replicas: 1", "+replicas: 3",
		"local/demo/deployment/search.yaml", "exportedCount=3", "Stopping the control plane",
		// The Parquet act: the bucket holds the latest rows, DuckDB reads them.
		"s3://inventory/inventory/cluster=local/ns=default/name=shop/generation=", "----- DuckDB over the Parquet export -----",
		"storefront  ghcr.io/example/storefront:1.5.0", "cart"} {
		if !strings.Contains(story, want) {
			t.Errorf("the story lacks %q:\n%s", want, story)
		}
	}
	if strings.Contains(story, "grafana") && strings.Contains(story, "local/demo/deployment/grafana.yaml") {
		t.Error("grafana, which the target leaves out, was exported")
	}
	files, err := exec.Command("git", "--git-dir", res.Repo, "ls-tree", "-r", "--name-only", "main").Output()
	if err != nil || strings.Fields(string(files))[0] != "local/demo/deployment/cart.yaml" || len(strings.Fields(string(files))) != 3 {
		t.Errorf("repository files: %s (%v)", files, err)
	}
	// Everything it started is stopped: the API server no longer answers.
	cfg, err := clientcmd.BuildConfigFromFlags("", res.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	probe := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // only asks whether anything listens
	if resp, err := probe.Get(cfg.Host + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("the API server at %s still answers after the demo", cfg.Host)
	}
}
