package demo

import (
	"context"
	_ "embed"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

//go:embed kwok-stages.yaml
var kwokStages string

// process is a control-plane component run as a child process; its output
// goes to a log file under the demo directory.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan error
}

func start(dir, bin string, args ...string) (*process, error) {
	log, err := os.Create(filepath.Join(dir, filepath.Base(bin)+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Killed with the demo even if it dies without cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", filepath.Base(bin), err)
	}
	p := &process{name: filepath.Base(bin), cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); log.Close() }()
	return p, nil
}

// stop ends the process: SIGTERM, then SIGKILL after 10 s.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case _ = <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = <-p.done
	}
}

// exited reports a process that stopped on its own.
func (p *process) exited() error {
	select {
	case err := <-p.done:
		p.done <- err
		return fmt.Errorf("%s exited: %v (see its log in the demo directory)", p.name, err)
	default:
		return nil
	}
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// startCluster starts what turns the API server into a small cluster:
// kube-controller-manager (Deployments → ReplicaSets → Pods),
// kube-scheduler (Pods → nodes) and kwok (a fake node whose Pods run).
func startCluster(ctx context.Context, c client.Client, assets, dir, kubeconfig string) ([]*process, error) {
	var procs []*process
	fail := func(err error) ([]*process, error) {
		for _, p := range procs {
			p.stop()
		}
		return nil, err
	}
	kwokPort, err := freePort()
	if err != nil {
		return fail(err)
	}
	stages := filepath.Join(dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, []byte(kwokStages), 0o644); err != nil {
		return fail(err)
	}
	for _, spec := range []struct {
		bin  string
		args []string
	}{
		{"kube-controller-manager", []string{"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--secure-port=0",
			"--controllers=*,-serviceaccount-token", "--use-service-account-credentials=false", "--concurrent-deployment-syncs=5"}},
		{"kube-scheduler", []string{"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--secure-port=0"}},
		{"kwok", []string{"--kubeconfig=" + kubeconfig, "--config=" + stages, "--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", "--cidr=10.244.0.0/24", "--node-ip=10.244.0.1",
			"--node-lease-duration-seconds=40", "--server-address=127.0.0.1:" + kwokPort}},
	} {
		p, err := start(dir, filepath.Join(assets, spec.bin), spec.args...)
		if err != nil {
			return fail(err)
		}
		procs = append(procs, p)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-node-0",
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		Labels:      map[string]string{"kubernetes.io/hostname": "kwok-node-0", "type": "kwok"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{}, Capacity: corev1.ResourceList{}}}
	if err := c.Create(ctx, node); err != nil {
		return fail(fmt.Errorf("create the fake node: %w", err))
	}
	return procs, nil
}
