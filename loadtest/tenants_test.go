package main

import (
	"context"
	"testing"
	"time"
)

// TestTenantsShareEveryServer: a few teams on one operator, each with its
// own pipeline and sinks on the same PostgreSQL server, Kafka cluster and
// Git repository, then namespace churn while one team edits its profile,
// then a restart. The servers see one client each (the pool's bound, one
// mirror, one read of the topic after the restart), the table holds every row, the edit reaches the team's rows,
// and nothing the churn deleted is left in status or /metrics. Times are
// logged, never asserted.
func TestTenantsShareEveryServer(t *testing.T) {
	bin := buildOperator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	res, err := RunTenants(ctx, TenantsOptions{Binary: bin, Tenants: 6, Objects: 60, ChurnRate: 10, ChurnFor: 4 * time.Second, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	// The shared pool holds at most 8; a sink's probe dials one of its own.
	if res.PostgresConns > 9 || res.PostgresConnsRestart > 9 {
		t.Errorf("%d and %d Postgres connections (before and after the restart) for one server, want at most 8 and a probe's",
			res.PostgresConns, res.PostgresConnsRestart)
	}
	// The restarted operator reads the shared topic about once for every
	// team, not once per team.
	if res.TopicBytesRead <= 0 || res.TopicBytesRead > 2*res.TopicBytes {
		t.Errorf("the restarted operator read back %d bytes of a topic one read of which is %d, want more than none and at most twice that",
			res.TopicBytesRead, res.TopicBytes)
	}
	if res.GitMirrors != 1 {
		t.Errorf("%d Git mirrors for one repository, want 1", res.GitMirrors)
	}
	c := res.Churn
	if c == nil || c.Namespaces != 40 {
		t.Fatalf("the churn: %+v, want 40 namespaces", c)
	}
	if c.SeriesOfGone != 0 {
		t.Errorf("%d /metrics series name a deleted namespace", c.SeriesOfGone)
	}
	if c.StatusBytes > 64<<10 {
		t.Errorf("the largest target status is %d bytes during the churn, want at most 64 KiB", c.StatusBytes)
	}
	t.Logf("synced %v, restart acknowledged %v (by sink %v), profile edit %v; Secret reads %v; %d series; RSS %d MiB, CPU %.1f s; API server and etcd CPU %v s",
		res.AllSynced, res.RestartAcked, res.RestartAckedBySink, c.EditTook, res.SecretReads, res.Series, res.PeakRSS>>20, res.CPUSeconds, res.ControlPlaneCPU)
}
