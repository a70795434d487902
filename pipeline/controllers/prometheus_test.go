//go:build integration

package controllers_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsParseWithTheExpectedLabels parses the manager's /metrics with
// the Prometheus text parser while pipelines run.
func TestMetricsParseWithTheExpectedLabels(t *testing.T) {
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	for name, labels := range map[string][]string{
		"kollect_actor_mailbox_depth":     {"actor", "name"},
		"kollect_sink_circuit_state":      {"inventory", "binding"},
		"kollect_export_duration_seconds": {"sink_type"},
	} {
		f := families[name]
		if f == nil || len(f.GetMetric()) == 0 {
			t.Errorf("%s: no series", name)
			continue
		}
		got := map[string]bool{}
		for _, l := range f.GetMetric()[0].GetLabel() {
			got[l.GetName()] = true
		}
		for _, l := range labels {
			if !got[l] {
				t.Errorf("%s lacks label %s", name, l)
			}
		}
	}
}

// TestPrometheusScrapesTheManager runs a real Prometheus (Debian's
// package) against the manager and queries what it scraped, including
// every query of the Grafana dashboard. It runs after this package's
// pipeline tests, whose actors provide the series.
func TestPrometheusScrapesTheManager(t *testing.T) {
	listen, log := startPrometheus(t)
	query := func(q string) (map[string]bool, error) {
		samples, err := promQuery(listen, q)
		actors := map[string]bool{}
		for _, r := range samples {
			actors[r.Metric["actor"]] = true
		}
		return actors, err
	}
	eventually(t, 30*time.Second, "Prometheus has scraped mailbox depth by actor kind", func() error {
		actors, err := query("count by (actor) (kollect_actor_mailbox_depth)")
		if err != nil {
			return fmt.Errorf("%v (prometheus log: %s)", err, log)
		}
		for _, a := range []string{"target", "inventory", "sink"} {
			if !actors[a] {
				return fmt.Errorf("actor kinds %v, want target, inventory and sink", actors)
			}
		}
		return nil
	})
	if up, err := query(`up{job="kollect"} == 1`); err != nil || len(up) == 0 {
		t.Errorf("up{job=\"kollect\"} == 1 returned nothing (%v)", err)
	}

	// Every dashboard query runs on this Prometheus, and the ones over
	// series a running pipeline always has return data.
	raw, err := os.ReadFile(filepath.Join(env.RepoRoot, "deploy", "dashboards", "kollect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			resp, err := http.Get("http://" + listen + "/api/v1/query?query=" + url.QueryEscape(target.Expr))
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ Status, Error string }
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if body.Status != "success" {
				t.Errorf("dashboard panel %q: %s: %s", p.Title, target.Expr, body.Error)
			}
		}
	}
	for _, q := range []string{"max by (inventory) (kollect_inventory_items)", "max by (actor) (kollect_actor_mailbox_depth)"} {
		if got, err := query(q); err != nil || len(got) == 0 {
			t.Errorf("%s returned no series (%v)", q, err)
		}
	}
}

// startPrometheus runs a real Prometheus (Debian's package) that scrapes
// the manager every second; it returns its address and its log.
func startPrometheus(t *testing.T) (string, *strings.Builder) {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus not found: run `make test-deps`: %v", err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: kollect
    static_configs: [{targets: ['%s']}]
`, metricsAddr)), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+listen, "--log.level=warn")
	log := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return listen, log
}

// promSample is one series of an instant query's result.
type promSample struct {
	Metric map[string]string
	Value  []any // [time, "value"]
}

func (s promSample) value() string {
	if len(s.Value) == 2 {
		return fmt.Sprint(s.Value[1])
	}
	return ""
}

// promQuery runs an instant query.
func promQuery(listen, q string) ([]promSample, error) {
	resp, err := http.Get("http://" + listen + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status, Error string
		Data          struct{ Result []promSample }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", q, body.Error)
	}
	return body.Data.Result, nil
}
