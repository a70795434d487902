package testenv

import (
	"context"
	"fmt"
	"net"

	"github.com/spf13/pflag"

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
	base := []string{"--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + probes,
		"--export-batch-window=50ms", "--status-flush-interval=100ms", "--zap-log-level=error"}
	if err := fs.Parse(append(base, args...)); err != nil {
		return nil, fmt.Errorf("manager flags: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{MetricsAddr: metrics, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- manager.Run(ctx, e.Config, o) }()
	return m, nil
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
