package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"kollect.dev/kollect/pipeline/testenv"
)

// operator is the kollect manager run as a process of its own.
type operator struct {
	cmd     *exec.Cmd
	metrics string
	pprof   string
	done    chan error
}

// heapProfile fetches the operator's heap profile after a garbage
// collection (what is live, not what is waiting to be collected).
func (o *operator) heapProfile() ([]byte, error) {
	resp, err := http.Get("http://" + o.pprof + "/debug/pprof/heap?gc=1")
	if err != nil {
		return nil, fmt.Errorf("heap profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("heap profile: %s", resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// startOperator runs bin as the manager against kubeconfig, with env added
// to this process's environment.
func startOperator(ctx context.Context, bin, kubeconfig, dir string, env ...string) (*operator, error) {
	var addrs [3]string
	for i := range addrs {
		a, err := testenv.FreeAddr()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	metrics, probes, pprof := addrs[0], addrs[1], addrs[2]
	log, err := os.Create(filepath.Join(dir, "operator.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "manager", "--kubeconfig="+kubeconfig, "--leader-elect=false", "--dev-allow-loopback-sinks",
		"--metrics-bind-address="+metrics, "--health-probe-bind-address="+probes, "--zap-log-level=error",
		"--enable-pprof", "--pprof-bind-address="+pprof)
	cmd.Env = append(append(os.Environ(), "KOLLECT_GIT_MIRROR_DIR="+filepath.Join(dir, "mirrors")), env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the operator: %w", err)
	}
	op := &operator{cmd: cmd, metrics: metrics, pprof: pprof, done: make(chan error, 1)}
	go func() { op.done <- cmd.Wait(); log.Close() }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get("http://" + probes + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return op, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			op.stop()
			tail, _ := os.ReadFile(log.Name())
			if len(tail) > 2000 {
				tail = tail[len(tail)-2000:]
			}
			return nil, fmt.Errorf("the operator did not become ready; its log ends:\n%s", tail)
		}
	}
}

// stop sends SIGTERM and waits (the operator must stop within seconds).
func (o *operator) stop() {
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-o.done:
	case <-time.After(15 * time.Second):
		_ = o.cmd.Process.Kill()
		<-o.done
	}
}
