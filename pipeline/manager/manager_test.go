//go:build integration

package manager_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/pipeline/manager"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func parse(t *testing.T, args ...string) manager.Options {
	t.Helper()
	var o manager.Options
	fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func TestManagerServesProbesAndMetricsAndTakesTheLease(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kollect-system"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	metrics, probes := freeAddr(t), freeAddr(t)
	o := parse(t, "--metrics-bind-address="+metrics, "--metrics-secure=false", "--health-probe-bind-address="+probes,
		"--leader-elect", "--leader-election-namespace=kollect-system",
		"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=1s")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- manager.Run(ctx, env.Config, o) }()

	testenv.Eventually(t, 30*time.Second, "manager endpoints", func() error {
		for _, path := range []string{"/healthz", "/readyz"} {
			code, _, err := get("http://" + probes + path)
			if err != nil || code != http.StatusOK {
				return fmt.Errorf("%s: %d %v", path, code, err)
			}
		}
		return nil
	})
	testenv.Eventually(t, 30*time.Second, "manager endpoints", func() error {
		code, body, err := get("http://" + metrics + "/metrics")
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("/metrics: %d %v", code, err)
		}
		if !strings.Contains(body, "leader_election_master_status") {
			return fmt.Errorf("/metrics has no leader election series yet")
		}
		return nil
	})
	testenv.Eventually(t, 30*time.Second, "manager endpoints", func() error {
		var lease coordinationv1.Lease
		key := types.NamespacedName{Namespace: "kollect-system", Name: manager.LeaderElectionID}
		if err := env.Client.Get(context.Background(), key, &lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("lease has no holder")
		}
		return nil
	})

	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("manager stopped with an error: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("manager did not stop within 15s of cancellation")
	}
	t.Logf("manager stopped %s after cancellation", time.Since(start).Round(time.Millisecond))

	// ReleaseOnCancel: the next leader need not wait for the lease to expire.
	var lease coordinationv1.Lease
	key := types.NamespacedName{Namespace: "kollect-system", Name: manager.LeaderElectionID}
	if err := env.Client.Get(context.Background(), key, &lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
		t.Errorf("lease still held by %q after shutdown", *lease.Spec.HolderIdentity)
	}
}

func TestOptionsValidation(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string // substring of the error; empty means valid
	}{
		{"defaults", nil, ""},
		{"lease not above renew deadline", []string{"--leader-elect-lease-duration=10s", "--leader-elect-renew-deadline=10s"}, "--leader-elect-lease-duration"},
		{"retry not below renew deadline", []string{"--leader-elect-retry-period=40s"}, "--leader-elect-retry-period"},
		{"unknown auth mode", []string{"--inventory-auth-mode=basic"}, "--inventory-auth-mode"},
		{"non-positive export cap", []string{"--max-export-bytes=0"}, "--max-export-bytes"},
		{"writer id", []string{"--writer-id=cluster-a.eu_1"}, ""},
		{"writer id that is no ref segment", []string{"--writer-id=a/b"}, "--writer-id"},
		{"upstream's event envelopes", []string{"--event-messages=envelope"}, ""},
		{"an unknown event message format", []string{"--event-messages=batch"}, "--event-messages"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := func() error { o := parse(t, tc.args...); return o.Validate() }()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want an error naming %s, got %v", tc.want, err)
			}
		})
	}
}

func TestDefaultsMatchTheDocumentedPorts(t *testing.T) {
	o := parse(t)
	if o.MetricsBindAddress != ":8443" || !o.MetricsSecure || o.ProbeBindAddress != ":8081" {
		t.Errorf("want secure metrics on :8443 (upstream's) and probes on :8081, got %q (secure %t) and %q", o.MetricsBindAddress, o.MetricsSecure, o.ProbeBindAddress)
	}
	if o.NamespaceCeiling != "own" || o.AllowAmbientCredentials || o.MetricsAttributeLabels {
		t.Errorf("want closed defaults, got --namespace-ceiling=%s --allow-ambient-credentials=%t --metrics-attribute-labels=%t",
			o.NamespaceCeiling, o.AllowAmbientCredentials, o.MetricsAttributeLabels)
	}
	if o.MaxExportBytes != manager.DefaultMaxExportBytes {
		t.Errorf("want --max-export-bytes %d, got %d", manager.DefaultMaxExportBytes, o.MaxExportBytes)
	}
}

func TestIgnoredFlagsAreNamed(t *testing.T) {
	var o manager.Options
	fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--inventory-http-enabled", "--collect-dispatch-workers=8", "--collect-dispatch-queue-size=9", "--max-concurrent-reconciles-target=3", "--reconcile-rate-limit=1s"}); err != nil {
		t.Fatal(err)
	}
	got := manager.Ignored(fs)
	if len(got) != 2 || !strings.HasPrefix(got[0], "--collect-dispatch-queue-size: ") || !strings.HasPrefix(got[1], "--collect-dispatch-workers: ") {
		t.Fatalf("ignored flags: %v", got)
	}
}

// TestTheWriterIDIsTheClustersKubeSystemUID: by default, the flag when set,
// nothing with none.
func TestTheWriterIDIsTheClustersKubeSystemUID(t *testing.T) {
	var ns corev1.Namespace
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "kube-system"}, &ns); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"": string(ns.UID), "cluster-a": "cluster-a", "none": ""} {
		got, err := manager.WriterID(context.Background(), env.Client, flag)
		if err != nil || got != want {
			t.Errorf("--writer-id=%q: %q, %v; want %q", flag, got, err, want)
		}
	}
	if ns.UID == "" {
		t.Fatal("kube-system has no UID")
	}
}
