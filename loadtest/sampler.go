package main

import (
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Sample is one reading taken while a run is under way.
type Sample struct {
	At         time.Duration      `json:"at"` // since the run started
	RSSBytes   int64              `json:"rssBytes"`
	CPUSeconds float64            `json:"cpuSeconds"` // process CPU time so far
	Mailbox    map[string]float64 `json:"mailbox"`    // max depth per actor kind
}

// sampler reads the process's RSS and CPU time and the deepest mailbox per
// actor kind at a fixed interval.
type sampler struct {
	gather prometheus.Gatherer
	start  time.Time
	stop   chan struct{}
	done   chan struct{}

	mu      sync.Mutex
	samples []Sample
}

func startSampler(g prometheus.Gatherer, every time.Duration) *sampler {
	s := &sampler{gather: g, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
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
	smp.RSSBytes, smp.CPUSeconds = procStats()
	if s.gather != nil {
		if mfs, err := s.gather.Gather(); err == nil {
			for _, mf := range mfs {
				if mf.GetName() != "kollect_actor_mailbox_depth" {
					continue
				}
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "actor" && m.GetGauge().GetValue() > smp.Mailbox[l.GetValue()] {
							smp.Mailbox[l.GetValue()] = m.GetGauge().GetValue()
						}
					}
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

// procStats reads this process's resident set size and CPU time.
func procStats() (int64, float64) { return pidStats(os.Getpid()) }

// peaks summarises samples: the highest RSS and mailbox depth per kind.
func peaks(samples []Sample) (int64, map[string]float64) {
	var rss int64
	mb := map[string]float64{}
	for _, s := range samples {
		rss = max(rss, s.RSSBytes)
		for k, v := range s.Mailbox {
			mb[k] = max(mb[k], v)
		}
	}
	return rss, mb
}
