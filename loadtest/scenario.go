package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

// Scenario is a load-test definition, as shipped in loadtest/scenarios.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Mode: engine, cluster, fleet or tenants (Namespaces is then the
	// number of teams, each with its own pipeline and sinks).
	Mode string `json:"mode"`
	// Clusters, in fleet mode, is how many clusters (control planes and
	// operators) export to the shared sinks; objects, namespaces and churn
	// are then per cluster.
	Clusters int `json:"clusters,omitempty"`
	// Objects and the namespaces they are spread over (cluster mode).
	Objects    int     `json:"objects"`
	Namespaces int     `json:"namespaces,omitempty"`
	CreateRate float64 `json:"createRate,omitempty"`
	// DeploymentShare of the objects are Deployments (cluster mode).
	DeploymentShare float64 `json:"deploymentShare,omitempty"`
	// Updates, in engine mode, sent as fast as they go after the creates
	// (instead of churnRate × churnFor).
	Updates int `json:"updates,omitempty"`
	// Churn after every row arrived: updates per second, for how long (in
	// tenants mode: namespaces created, and deleted 5 s later, per second).
	ChurnRate float64  `json:"churnRate,omitempty"`
	ChurnFor  Duration `json:"churnFor,omitempty"`
	// DeleteShare of the churn's changes are deletes (cluster mode); a
	// deleted object is created again at its next change.
	DeleteShare float64 `json:"deleteShare,omitempty"`
	// GitBursts, in cluster mode, is how many objects are updated, then
	// deleted, then created again, each as fast as the API server takes
	// them, once every row arrived; each burst's arrival in Git is timed.
	GitBursts int `json:"gitBursts,omitempty"`
	// OperatorProfile and OperatorProfileFor come from the command line
	// (-operator-cpuprofile): the operator's CPU profile from the first
	// create on, for that long (cluster mode).
	OperatorProfile    string        `json:"-"`
	OperatorProfileFor time.Duration `json:"-"`
	// GoMemLimit is the operator's GOMEMLIMIT (cluster mode), as the Helm
	// chart's memory limit would set it; empty: none.
	GoMemLimit string `json:"goMemLimit,omitempty"`
	// MemoryLimit runs the operator in a memory cgroup with this limit (a
	// Kubernetes quantity such as 250Mi), as a pod's
	// resources.limits.memory does (cluster mode); the operator sets its
	// soft limit from it, as in a pod, unless GoMemLimit is set.
	MemoryLimit string `json:"memoryLimit,omitempty"`
	// Cluster is the API server's address when a kubeconfig was given
	// (set by the harness, not read from the file).
	Cluster string `json:"cluster,omitempty"`
	// SinkDelay makes every engine-mode export this slow.
	SinkDelay Duration `json:"sinkDelay,omitempty"`
	// OperatorArgs are more flags for the operator (tenants mode), such
	// as an API budget (--kube-api-qps).
	OperatorArgs []string `json:"operatorArgs,omitempty"`
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
	if s.Objects <= 0 || (s.Mode != "engine" && s.Mode != "cluster" && s.Mode != "fleet" && s.Mode != "tenants") {
		return s, fmt.Errorf("%s: want mode engine, cluster, fleet or tenants and objects > 0", path)
	}
	if s.Mode == "fleet" && s.Clusters < 2 {
		return s, fmt.Errorf("%s: a fleet has clusters: 2 or more", path)
	}
	if s.DeploymentShare < 0 || s.DeploymentShare > 1 || s.DeleteShare < 0 || s.DeleteShare > 1 {
		return s, fmt.Errorf("%s: deploymentShare and deleteShare are fractions between 0 and 1", path)
	}
	if s.Namespaces <= 0 {
		s.Namespaces = 10
	}
	return s, nil
}

// Run runs a scenario; binary is the kollect binary for cluster mode, and
// kubeconfig the cluster it loads ("" for a local control plane). In
// engine mode, profile (may be nil) gets the CPU profile of the measured
// section alone: not the synthetic objects built before it.
func Run(ctx context.Context, s Scenario, binary, kubeconfig string, profile io.Writer, logf func(string, ...any)) (*Report, error) {
	r := &Report{Scenario: s, Machine: machine(), StartedAt: time.Now()}
	var err error
	switch s.Mode {
	case "engine":
		updates := int(s.ChurnRate * s.ChurnFor.Seconds())
		if s.Updates > 0 {
			updates = s.Updates
		}
		r.Engine, err = RunEngine(ctx, EngineOptions{Objects: s.Objects, Updates: updates, UpdateRate: s.ChurnRate, SinkDelay: s.SinkDelay.Duration,
			CPUProfile: profile})
	case "cluster":
		r.Cluster, err = RunCluster(ctx, ClusterOptions{Binary: binary, Kubeconfig: kubeconfig, Objects: s.Objects, Namespaces: s.Namespaces,
			DeploymentShare: s.DeploymentShare, CreateRate: s.CreateRate, ChurnRate: s.ChurnRate, ChurnFor: s.ChurnFor.Duration,
			DeleteShare: s.DeleteShare, GitBursts: s.GitBursts, OperatorProfile: s.OperatorProfile, OperatorProfileFor: s.OperatorProfileFor, GoMemLimit: s.GoMemLimit, MemoryLimit: s.MemoryLimit, Log: logf})
	case "tenants":
		if kubeconfig != "" {
			return r, fmt.Errorf("a tenants run starts its own control plane: drop -kubeconfig")
		}
		r.Tenants, err = RunTenants(ctx, TenantsOptions{Binary: binary, Tenants: s.Namespaces, Objects: s.Objects,
			ChurnRate: s.ChurnRate, ChurnFor: s.ChurnFor.Duration, OperatorArgs: s.OperatorArgs, Log: logf})
	case "fleet":
		if kubeconfig != "" {
			return r, fmt.Errorf("a fleet run starts its own control planes: drop -kubeconfig")
		}
		r.Fleet, err = RunFleet(ctx, FleetOptions{Binary: binary, Clusters: s.Clusters, Objects: s.Objects, Namespaces: s.Namespaces,
			ChurnRate: s.ChurnRate, ChurnFor: s.ChurnFor.Duration, DeleteShare: s.DeleteShare, Log: logf})
	}
	return r, err
}
