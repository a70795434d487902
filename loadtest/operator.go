package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"kollect.dev/kollect/internal/testenv"
)

// operator is the kollect manager run as a process of its own, so its RSS
// and CPU are measured alone; pprof serves its heap profile.
type operator struct {
	*testenv.Process
}

// heapProfile fetches the operator's heap profile after a garbage
// collection (what is live, not what is waiting to be collected).
func (o *operator) heapProfile() ([]byte, error) {
	return o.Pprof("heap profile", "heap?gc=1", 0)
}

// goroutines is the operator's goroutine dump (pprof, debug=2).
func (o *operator) goroutines() ([]byte, error) {
	return o.Pprof("goroutine dump", "goroutine?debug=2", 0)
}

// cpuProfile is the operator's CPU profile (pprof) over the next d.
func (o *operator) cpuProfile(d time.Duration) ([]byte, error) {
	return o.Pprof("CPU profile", fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), 0)
}

// startOperator runs bin as the manager against kubeconfig, with env added
// to this process's environment, through wrap when set (testenv's
// ProcessOptions.Wrap). The scenarios run one team that collects across
// the namespaces it labels: a single-tenant install (--namespace-ceiling
// all).
func startOperator(ctx context.Context, bin, kubeconfig, dir string, wrap []string, env ...string) (*operator, error) {
	return startOperatorWith(ctx, bin, kubeconfig, dir, wrap, nil, env...)
}

// startOperatorWith is startOperator with more flags.
func startOperatorWith(ctx context.Context, bin, kubeconfig, dir string, wrap, args []string, env ...string) (*operator, error) {
	p, err := testenv.StartProcess(ctx, testenv.ProcessOptions{Binary: bin, Kubeconfig: kubeconfig,
		Log: filepath.Join(dir, "operator.log"), Env: append([]string{"KOLLECT_GIT_MIRROR_DIR=" + filepath.Join(dir, "mirrors")}, env...),
		Args:      append([]string{"--leader-elect=false", "--zap-log-level=error", "--enable-pprof", "--namespace-ceiling=all"}, args...),
		AddrFlags: []string{"--pprof-bind-address"}, Wrap: wrap})
	if err != nil {
		return nil, err
	}
	return &operator{Process: p}, nil
}

// stop sends SIGTERM and waits (the operator must stop within seconds).
func (o *operator) stop() { _, _ = o.Stop(15 * time.Second) }
