package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is the kollect manager run as a process of its own, the way a
// Deployment runs it: what fault-injection and load tests stop, kill and
// measure.
type Process struct {
	Cmd *exec.Cmd
	// MetricsAddr serves /metrics; ProbeAddr /healthz and /readyz.
	MetricsAddr, ProbeAddr string
	// Log is the file that holds the process's output.
	Log  string
	done chan error
}

// ProcessOptions describe one manager process.
type ProcessOptions struct {
	Binary     string // the kollect binary
	Kubeconfig string
	Log        string   // output file (created or appended to)
	Env        []string // added to this process's environment
	Args       []string // flags after the preset ones
	// Wrap, when set, is a command that runs the binary: the binary and
	// its arguments follow it (a shell that enters a cgroup and execs it,
	// for example). It must exec the binary, so the process is the
	// binary's.
	Wrap []string
}

// StartProcess starts `kollect manager` and waits until it is ready. The
// preset flags bind metrics and probes to free loopback ports and allow
// loopback sinks; Args may add or override flags.
func StartProcess(ctx context.Context, o ProcessOptions) (*Process, error) {
	metrics, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	probes, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	log, err := os.OpenFile(o.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	args := append([]string{"manager", "--kubeconfig=" + o.Kubeconfig, "--dev-allow-loopback-sinks",
		"--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + probes, "--validating-webhooks-enabled=false"}, o.Args...)
	cmd := exec.Command(o.Binary, args...)
	if len(o.Wrap) > 0 {
		cmd = exec.Command(o.Wrap[0], append(append(o.Wrap[1:len(o.Wrap):len(o.Wrap)], o.Binary), args...)...)
	}
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start the operator: %w", err)
	}
	p := &Process{Cmd: cmd, MetricsAddr: metrics, ProbeAddr: probes, Log: o.Log, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); log.Close() }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if p.Ready() {
			return p, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil || p.Exited() {
			p.Kill()
			return nil, fmt.Errorf("the operator did not become ready; its log ends:\n%s", p.Tail(2000))
		}
	}
}

// Ready reports whether /readyz answers 200.
func (p *Process) Ready() bool {
	resp, err := http.Get("http://" + p.ProbeAddr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM and waits up to grace for the process to exit; past
// it the process is killed and Stop says so. It returns how long the exit
// took.
func (p *Process) Stop(grace time.Duration) (time.Duration, error) {
	start := time.Now()
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return time.Since(start), nil
	case <-time.After(grace):
		p.Kill()
		return time.Since(start), errors.New("the operator did not exit within its grace period after SIGTERM; killed")
	}
}

// Kill sends SIGKILL and waits for the process to end.
func (p *Process) Kill() {
	_ = p.Cmd.Process.Kill()
	err := <-p.done
	p.done <- err
}

// Warnings returns the last n warning and error lines of the log, which
// holds every process started with it (their stack traces left out): what
// a failed test shows beside the log's end.
func (p *Process) Warnings(n int) string {
	b, _ := os.ReadFile(p.Log)
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "\tWARN\t") || strings.Contains(l, "\tERROR\t") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// Tail returns the last n bytes of the process's log.
func (p *Process) Tail(n int) string {
	b, _ := os.ReadFile(p.Log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
