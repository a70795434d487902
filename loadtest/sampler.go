package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one reading taken while a run is under way.
type Sample struct {
	At       time.Duration `json:"at"` // since the run started
	RSSBytes int64         `json:"rssBytes"`
	// FileBytes is the part of RSSBytes backed by files (mostly the
	// executable's pages): the kernel can drop it under memory pressure,
	// so a container's limit is met or missed by the rest, the anonymous
	// memory.
	FileBytes int64 `json:"fileBytes"`
	// CgroupBytes is the working set of the operator's memory cgroup (when
	// it runs in one): what it is charged, anonymous memory and page
	// cache, less the inactive page cache, as the kubelet counts it.
	CgroupBytes int64   `json:"cgroupBytes,omitempty"`
	CPUSeconds  float64 `json:"cpuSeconds"` // process CPU time so far
	// SystemSeconds is the part of CPUSeconds spent in the kernel on the
	// process's behalf: page faults and memory reclaim near a limit show
	// here.
	SystemSeconds float64            `json:"systemSeconds"`
	Mailbox       map[string]float64 `json:"mailbox"` // max depth per actor kind
}

// sampler reads a process's RSS and CPU time, and the deepest mailbox per
// actor kind from its metrics, at a fixed interval.
type sampler struct {
	pid     int
	metrics func() *dto.MetricFamily // kollect_actor_mailbox_depth, or nil
	charged func() int64             // the cgroup's charge, or nil
	start   time.Time
	stop    chan struct{}
	done    chan struct{}

	mu      sync.Mutex
	samples []Sample
}

func startSampler(pid int, metrics func() *dto.MetricFamily, charged func() int64, every time.Duration) *sampler {
	s := &sampler{pid: pid, metrics: metrics, charged: charged, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.take()
			select {
			case <-t.C:
			case <-s.stop:
				s.take()
				return
			}
		}
	}()
	return s
}

func (s *sampler) take() {
	smp := Sample{At: time.Since(s.start), Mailbox: map[string]float64{}}
	smp.RSSBytes, smp.FileBytes, smp.CPUSeconds, smp.SystemSeconds = pidStats(s.pid)
	if s.charged != nil {
		smp.CgroupBytes = s.charged()
	}
	if mf := s.metrics(); mf != nil {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "actor" {
					smp.Mailbox[l.GetValue()] = max(smp.Mailbox[l.GetValue()], m.GetGauge().GetValue())
				}
			}
		}
	}
	s.mu.Lock()
	s.samples = append(s.samples, smp)
	s.mu.Unlock()
}

// finish stops sampling and returns the readings.
func (s *sampler) finish() []Sample {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples
}

const mailboxDepth = "kollect_actor_mailbox_depth"

// fromRegistry reads the mailbox family from an in-process registry.
func fromRegistry(g prometheus.Gatherer) func() *dto.MetricFamily {
	return func() *dto.MetricFamily {
		mfs, err := g.Gather()
		if err != nil {
			return nil
		}
		for _, mf := range mfs {
			if mf.GetName() == mailboxDepth {
				return mf
			}
		}
		return nil
	}
}

// fromEndpoint reads the mailbox family from a /metrics address.
func fromEndpoint(addr string) func() *dto.MetricFamily {
	return func() *dto.MetricFamily {
		mfs, err := scrape(addr)
		if err != nil {
			return nil
		}
		return mfs[mailboxDepth]
	}
}

// scrape reads and parses a /metrics address.
func scrape(addr string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// pidStats reads a process's resident set size, the file-backed part of
// it, its CPU time, and the system part of that (Linux).
func pidStats(pid int) (rss, file int64, cpu, system float64) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid)); err == nil {
		if f := strings.Fields(string(b)); len(f) > 2 {
			pages, _ := strconv.ParseInt(f[1], 10, 64)
			shared, _ := strconv.ParseInt(f[2], 10, 64)
			rss, file = pages*int64(os.Getpagesize()), shared*int64(os.Getpagesize())
		}
	}
	if _, f := procStat(pid); f != nil {
		cpu, system = cpuOf(f)
	}
	return rss, file, cpu, system
}

// procStat reads /proc/<pid>/stat: the command name, and the fields
// after it (state, ppid, ...); nil when it cannot be read.
func procStat(pid int) (comm string, fields []string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", nil
	}
	s := string(b)
	open, shut := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || shut < open {
		return "", nil
	}
	return s[open+1 : shut], strings.Fields(s[shut+1:])
}

// cpuOf is the CPU time in a process's stat fields (after its name), and
// the system part of it.
func cpuOf(f []string) (cpu, system float64) {
	if len(f) <= 12 {
		return 0, 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100, st / 100 // USER_HZ
}

// peaks summarises samples: the highest RSS, the highest anonymous RSS
// (RSS less its file-backed pages), and the deepest mailbox per kind.
func peaks(samples []Sample) (int64, int64, map[string]float64) {
	var rss, anon int64
	mb := map[string]float64{}
	for _, s := range samples {
		rss, anon = max(rss, s.RSSBytes), max(anon, s.RSSBytes-s.FileBytes)
		for k, v := range s.Mailbox {
			mb[k] = max(mb[k], v)
		}
	}
	return rss, anon, mb
}

// scrapeGauge reads one unlabelled gauge from a /metrics address.
func scrapeGauge(addr, name string) (float64, error) {
	mfs, err := scrape(addr)
	if err != nil {
		return 0, err
	}
	mf := mfs[name]
	if mf == nil || len(mf.GetMetric()) == 0 {
		return 0, fmt.Errorf("%s not exported", name)
	}
	return mf.GetMetric()[0].GetGauge().GetValue(), nil
}

// peakWorkingSet is the highest cgroup working set sampled.
func peakWorkingSet(samples []Sample) int64 {
	var n int64
	for _, s := range samples {
		n = max(n, s.CgroupBytes)
	}
	return n
}

// controlPlaneCPU adds the CPU seconds of this process's children that
// are the local control plane (etcd and kube-apiserver, which envtest
// starts): what the API side of a run cost on the machine the operator
// shares with it. 0 against a real cluster.
func controlPlaneCPU() float64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	total := 0.0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		name, f := procStat(pid)
		if len(f) < 2 || (name != "etcd" && name != "kube-apiserver") {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != self {
			continue
		}
		cpu, _ := cpuOf(f)
		total += cpu
	}
	return total
}
