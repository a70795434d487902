package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"time"

	"kollect.dev/kollect/pipeline/harness/testenv"
)

// operator is the kollect manager run as a process of its own, so its RSS
// and CPU are measured alone; pprof serves its heap profile.
type operator struct {
	*testenv.Process
	pprof string
}

// heapProfile fetches the operator's heap profile after a garbage
// collection (what is live, not what is waiting to be collected).
func (o *operator) heapProfile() ([]byte, error) {
	return o.pprofGet("heap profile", "heap?gc=1")
}

// goroutines is the operator's goroutine dump (pprof, debug=2).
func (o *operator) goroutines() ([]byte, error) {
	return o.pprofGet("goroutine dump", "goroutine?debug=2")
}

// cpuProfile is the operator's CPU profile (pprof) over the next d.
func (o *operator) cpuProfile(d time.Duration) ([]byte, error) {
	return o.pprofGet("CPU profile", fmt.Sprintf("profile?seconds=%d", int(d.Seconds())))
}

// pprofGet reads one of the operator's /debug/pprof/ endpoints.
func (o *operator) pprofGet(what, endpoint string) ([]byte, error) {
	resp, err := http.Get("http://" + o.pprof + "/debug/pprof/" + endpoint)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", what, resp.Status)
	}
	return io.ReadAll(resp.Body)
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
	return &operator{Process: p, pprof: p.Addrs["--pprof-bind-address"]}, nil
}

// stop sends SIGTERM and waits (the operator must stop within seconds).
func (o *operator) stop() { _, _ = o.Stop(15 * time.Second) }
