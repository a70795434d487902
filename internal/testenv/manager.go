package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"kollect.dev/kollect/pipeline/manager"
)

// Manager is a running kollect manager.
type Manager struct {
	// MetricsAddr serves /metrics.
	MetricsAddr string
	cancel      context.CancelFunc
	done        chan error
}

// StartManager runs the real manager against e with the given extra flags
// (fast batching and status flushes are preset for tests).
func (e *Env) StartManager(args ...string) (*Manager, error) {
	return e.StartManagerAs(e.Config, args...)
}

// StartManagerAs runs the manager with another identity's rest config (an
// impersonated service account), as a deployment with that account's RBAC
// would run.
func (e *Env) StartManagerAs(cfg *rest.Config, args ...string) (*Manager, error) {
	// A free port can be taken by another test process between the check
	// and the manager's bind: start again on other ports when that happens.
	for attempt := 1; ; attempt++ {
		m, err := e.startManager(cfg, args...)
		if err != nil && strings.Contains(err.Error(), "address already in use") && attempt < 5 {
			continue
		}
		return m, err
	}
}

func (e *Env) startManager(cfg *rest.Config, args ...string) (*Manager, error) {
	metrics, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	probes, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	var o manager.Options
	fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
	o.BindFlags(fs)
	base := []string{"--metrics-bind-address=" + metrics, "--metrics-secure=false", "--health-probe-bind-address=" + probes,
		"--export-batch-window=50ms", "--status-flush-interval=100ms", "--collect-metrics-sample-interval=500ms", "--zap-log-level=error"}
	if w := e.webhooks; w != nil {
		base = append(base, "--webhook-host="+w.LocalServingHost, fmt.Sprintf("--webhook-port=%d", w.LocalServingPort),
			"--webhook-cert-path="+w.LocalServingCertDir)
	} else {
		base = append(base, "--validating-webhooks-enabled=false")
	}
	if err := fs.Parse(append(base, args...)); err != nil {
		return nil, fmt.Errorf("manager flags: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{MetricsAddr: metrics, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- manager.Run(ctx, cfg, o) }()
	if err := waitForListener(metrics, m.done); err != nil {
		cancel()
		return nil, err
	}
	if w := e.webhooks; w != nil && o.WebhooksEnabled {
		// Nothing of kollect.dev can be written until the webhooks answer.
		if err := waitForTLS(net.JoinHostPort(w.LocalServingHost, fmt.Sprint(w.LocalServingPort)), m.done); err != nil {
			cancel()
			return nil, err
		}
	}
	return m, nil
}

// waitForListener waits until the manager serves addr (its metrics), or
// stops; the error then is the manager's own.
func waitForListener(addr string, done chan error) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			return fmt.Errorf("manager stopped at start: %v", err)
		default:
		}
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = conn.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("the manager's metrics at %s did not answer within 60s", addr)
}

// waitForTLS waits until addr completes a TLS handshake, or the manager
// stops.
func waitForTLS(addr string, done chan error) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("manager stopped before its webhooks served: %v", err)
		default:
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a readiness probe
		if err == nil {
			_ = conn.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("webhooks at %s did not answer within 60s", addr)
}

// Stop stops the manager and returns its error.
func (m *Manager) Stop() error {
	m.cancel()
	return <-m.done
}

// FreeAddr returns a loopback address nothing listens on yet.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
