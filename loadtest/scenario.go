package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

// Scenario is a load-test definition, as shipped in loadtest/scenarios.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Mode: engine or cluster.
	Mode string `json:"mode"`
	// Objects and the namespaces they are spread over (cluster mode).
	Objects    int     `json:"objects"`
	Namespaces int     `json:"namespaces,omitempty"`
	CreateRate float64 `json:"createRate,omitempty"`
	// Updates, in engine mode, sent as fast as they go after the creates
	// (instead of churnRate × churnFor).
	Updates int `json:"updates,omitempty"`
	// Churn after every row arrived: updates per second, for how long.
	ChurnRate float64  `json:"churnRate,omitempty"`
	ChurnFor  Duration `json:"churnFor,omitempty"`
	// SinkDelay makes every engine-mode export this slow.
	SinkDelay Duration `json:"sinkDelay,omitempty"`
}

// Duration reads "30s"-style durations.
type Duration struct{ time.Duration }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := yaml.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	d.Duration = v
	return err
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

// LoadScenario reads a scenario file.
func LoadScenario(path string) (Scenario, error) {
	var s Scenario
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := yaml.UnmarshalStrict(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	if s.Objects <= 0 || (s.Mode != "engine" && s.Mode != "cluster") {
		return s, fmt.Errorf("%s: want mode engine or cluster and objects > 0", path)
	}
	if s.Namespaces <= 0 {
		s.Namespaces = 10
	}
	return s, nil
}

// Run runs a scenario; binary is the kollect binary for cluster mode.
func Run(ctx context.Context, s Scenario, binary string, logf func(string, ...any)) (*Report, error) {
	r := &Report{Scenario: s, Machine: machine(), StartedAt: time.Now()}
	var err error
	switch s.Mode {
	case "engine":
		updates := int(s.ChurnRate * s.ChurnFor.Seconds())
		if s.Updates > 0 {
			updates = s.Updates
		}
		r.Engine, err = RunEngine(ctx, EngineOptions{Objects: s.Objects, Updates: updates, UpdateRate: s.ChurnRate, SinkDelay: s.SinkDelay.Duration})
	case "cluster":
		r.Cluster, err = RunCluster(ctx, ClusterOptions{Binary: binary, Objects: s.Objects, Namespaces: s.Namespaces, CreateRate: s.CreateRate,
			ChurnRate: s.ChurnRate, ChurnFor: s.ChurnFor.Duration, Log: logf})
	}
	return r, err
}
