package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// operator is the kollect manager run as a process of its own.
type operator struct {
	cmd     *exec.Cmd
	metrics string
	done    chan error
}

func startOperator(ctx context.Context, bin, kubeconfig, dir string) (*operator, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	metrics := l.Addr().String()
	l.Close()
	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	probes := l.Addr().String()
	l.Close()
	log, err := os.Create(filepath.Join(dir, "operator.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "manager", "--kubeconfig="+kubeconfig, "--leader-elect=false", "--dev-allow-loopback-sinks",
		"--metrics-bind-address="+metrics, "--health-probe-bind-address="+probes, "--zap-log-level=error")
	cmd.Env = append(os.Environ(), "KOLLECT_GIT_MIRROR_DIR="+filepath.Join(dir, "mirrors"))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the operator: %w", err)
	}
	op := &operator{cmd: cmd, metrics: metrics, done: make(chan error, 1)}
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

// processSampler samples the operator process and its /metrics.
type processSampler struct {
	op    *operator
	start time.Time
	stop  chan struct{}
	done  chan struct{}
	out   []Sample
}

func startProcessSampler(op *operator, every time.Duration) *processSampler {
	s := &processSampler{op: op, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.take()
			select {
			case <-t.C:
			case <-s.stop:
				return
			}
		}
	}()
	return s
}

func (s *processSampler) take() {
	smp := Sample{At: time.Since(s.start), Mailbox: map[string]float64{}}
	smp.RSSBytes, smp.CPUSeconds = pidStats(s.op.cmd.Process.Pid)
	if resp, err := http.Get("http://" + s.op.metrics + "/metrics"); err == nil {
		parser := expfmt.NewTextParser(model.UTF8Validation)
		if mfs, err := parser.TextToMetricFamilies(resp.Body); err == nil {
			if mf := mfs["kollect_actor_mailbox_depth"]; mf != nil {
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "actor" {
							smp.Mailbox[l.GetValue()] = max(smp.Mailbox[l.GetValue()], m.GetGauge().GetValue())
						}
					}
				}
			}
		}
		resp.Body.Close()
	}
	s.out = append(s.out, smp)
}

func (s *processSampler) finish() []Sample {
	close(s.stop)
	<-s.done
	return s.out
}

// pidStats reads a process's resident set size and CPU time (Linux).
func pidStats(pid int) (int64, float64) {
	var rss int64
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid)); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			pages, _ := strconv.ParseInt(f[1], 10, 64)
			rss = pages * int64(os.Getpagesize())
		}
	}
	var cpu float64
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 12 {
				ut, _ := strconv.ParseFloat(f[11], 64)
				st, _ := strconv.ParseFloat(f[12], 64)
				cpu = (ut + st) / 100
			}
		}
	}
	return rss, cpu
}
