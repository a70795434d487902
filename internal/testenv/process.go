package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	// Addrs are the addresses given to ProcessOptions.AddrFlags, by flag.
	Addrs map[string]string
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
	// AddrFlags are more flags that each get a free loopback address, as
	// the metrics and probe flags do (--pprof-bind-address).
	AddrFlags []string
	// Wrap, when set, is a command that runs the binary: the binary and
	// its arguments follow it (a shell that enters a cgroup and execs it,
	// for example). It must exec the binary, so the process is the
	// binary's.
	Wrap []string
}

// StartProcess starts `kollect manager` and waits until it is ready. The
// preset flags bind metrics and probes to free loopback ports and allow
// loopback sinks; Args may add or override flags. A free port can be taken
// between the moment it is found and the moment the process binds it
// (another test's process, an outgoing connection): a process that exits
// because an address is in use is started again on fresh ports, three
// times at most.
func StartProcess(ctx context.Context, o ProcessOptions) (*Process, error) {
	for attempt := 1; ; attempt++ {
		p, err := startProcess(ctx, o)
		if !errors.Is(err, errAddrInUse) || attempt == 3 {
			return p, err
		}
	}
}

// errAddrInUse marks a process that exited because an address it was
// given was taken.
var errAddrInUse = errors.New("an address was in use")

func startProcess(ctx context.Context, o ProcessOptions) (*Process, error) {
	args := []string{"manager", "--kubeconfig=" + o.Kubeconfig, "--dev-allow-loopback-sinks", "--validating-webhooks-enabled=false", "--metrics-secure=false"}
	addrs := map[string]string{}
	for _, flag := range append([]string{"--metrics-bind-address", "--health-probe-bind-address"}, o.AddrFlags...) {
		a, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		addrs[flag] = a
		args = append(args, flag+"="+a)
	}
	args = append(args, o.Args...)
	log, err := os.OpenFile(o.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	before, err := log.Seek(0, io.SeekEnd)
	if err != nil {
		log.Close()
		return nil, err
	}
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
	p := &Process{Cmd: cmd, MetricsAddr: addrs["--metrics-bind-address"], ProbeAddr: addrs["--health-probe-bind-address"],
		Addrs: addrs, Log: o.Log, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); log.Close() }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if p.Ready() {
			return p, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil || p.Exited() {
			p.Kill()
			if out := p.since(before); strings.Contains(out, "address already in use") {
				return nil, fmt.Errorf("%w: %s", errAddrInUse, lastLine(out))
			}
			return nil, fmt.Errorf("the operator did not become ready; its log ends:\n%s", p.Tail(2000))
		}
	}
}

// since returns what the log holds from offset on.
func (p *Process) since(offset int64) string {
	b, _ := os.ReadFile(p.Log)
	if offset > int64(len(b)) {
		return ""
	}
	return string(b[offset:])
}

// lastLine returns the last line of s that is not empty.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
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
	case _ = <-p.done:
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

// BuildOperator builds the kollect binary from this module's source into
// dir and returns its path, for tests that run the manager as a process.
func BuildOperator(dir string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	binary := dir + "/kollect"
	build := exec.Command("go", "build", "-o", binary, "kollect.dev/kollect")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the operator: %v\n%s", err, out)
	}
	return binary, nil
}

// Pprof reads one of the process's /debug/pprof/ endpoints (what names it
// in errors), waiting at most timeout (0: as long as it takes, which a
// CPU profile over a minute needs). The process must serve pprof
// (--enable-pprof, and --pprof-bind-address in AddrFlags).
func (p *Process) Pprof(what, endpoint string, timeout time.Duration) ([]byte, error) {
	addr := p.Addrs["--pprof-bind-address"]
	if addr == "" {
		return nil, fmt.Errorf("%s: the operator does not serve pprof: start it with --enable-pprof and --pprof-bind-address in AddrFlags", what)
	}
	client := http.Client{Timeout: timeout}
	resp, err := client.Get("http://" + addr + "/debug/pprof/" + endpoint)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", what, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// Goroutines returns the process's goroutines, grouped by stack, that pass
// keep (all when nil): what a test that found the operator stuck logs.
func (p *Process) Goroutines(keep func(stack string) bool) (string, error) {
	b, err := p.Pprof("goroutine profile", "goroutine?debug=1", 10*time.Second)
	if err != nil {
		return "", err
	}
	var kept []string
	for _, g := range strings.Split(string(b), "\n\n") {
		if keep == nil || keep(g) {
			kept = append(kept, g)
		}
	}
	return strings.Join(kept, "\n\n"), nil
}
