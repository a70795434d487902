package faults

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// churn updates random objects of [0, n) until stopped, each write bounded
// so a frozen API server only makes writes fail; stop returns how many
// writes succeeded.
func (r *rig) churn(n int) (stop func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	var ok atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				wctx, c := context.WithTimeout(ctx, 2*time.Second)
				if r.put(wctx, name((i*7+w*131)%n), fmt.Sprintf("c%d-%d", w, i)) == nil {
					ok.Add(1)
				}
				c()
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	return func() int { cancel(); wg.Wait(); return int(ok.Load()) }
}

// clusterState lists what the cluster holds now: the rows every sink must
// end with.
func (r *rig) clusterState(ctx context.Context) state {
	r.t.Helper()
	var list corev1.ConfigMapList
	if err := env.Client.List(ctx, &list, client.InNamespace(r.ns), client.MatchingLabels{"app": "faults"}); err != nil {
		r.t.Fatal(err)
	}
	st := state{}
	for _, cm := range list.Items {
		st[cm.Name] = cm.Data["version"]
	}
	return st
}

// apiServerPID finds the test control plane's kube-apiserver by its port.
func apiServerPID(t *testing.T) int {
	t.Helper()
	u, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if !strings.HasSuffix(args[0], "kube-apiserver") {
			continue
		}
		for _, a := range args {
			if a == "--secure-port="+u.Port() {
				var pid int
				_, _ = fmt.Sscan(d.Name(), &pid)
				return pid
			}
		}
	}
	t.Fatalf("no kube-apiserver process serves port %s", u.Port())
	return 0
}

// TestAPIServerFreezeIsSurvived freezes the API server (SIGSTOP) for 20 s
// while objects churn: the manager keeps running, exports nothing wrong
// meanwhile, and exports the objects created afterwards; with the chart's
// leader-election settings it keeps its lease (losing it ends the process).
func TestAPIServerFreezeIsSurvived(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"without leader election", nil},
		{"with the chart's leader election", []string{"--leader-elect=true", "--leader-election-namespace=faults-freeze-le"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "faults-freeze"
			if len(tc.args) > 0 {
				ns += "-le"
			}
			freeze(t, ns, tc.args)
		})
	}
}

func freeze(t *testing.T, ns string, args []string) {
	ctx := context.Background()
	r := newRig(t, ns, args...)
	r.apply()
	n := min(objects(), 1000)
	_, first := r.seed(ctx, n)
	stop := r.churn(n)
	time.Sleep(2 * time.Second)
	pid := apiServerPID(t)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	time.Sleep(20 * time.Second)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("API server frozen for %s", time.Since(frozen).Round(time.Millisecond))
	time.Sleep(2 * time.Second)
	writes := stop()
	if r.op.Exited() {
		t.Fatalf("the manager exited during the outage; its log ends:\n%s", r.op.Tail(3000))
	}
	// Objects created after the outage arrive.
	if err := r.write(ctx, n, n+50, "after"); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	h := r.waitConverged(ctx, r.clusterState(ctx), 3*time.Minute)
	t.Logf("%d churn writes; after the outage every sink was exact in %s", writes, time.Since(resumed).Round(time.Millisecond))
	r.noRowEverDropped(len(first.commits), n)
	r.nothingDeleted(ctx, h)
}

// TestSinkOutageLosesNothing takes every sink away during churn (the Git
// remote disappears, PostgreSQL, NATS and Kafka stop) and brings them
// back: every sink catches up with the cluster, no commit ever drops a
// row, no row is deleted and no delete is published.
func TestSinkOutageLosesNothing(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "faults-sinks")
	r.apply()
	n := min(objects(), 1000)
	_, first := r.seed(ctx, n)
	stop := r.churn(n)
	time.Sleep(time.Second)
	if err := os.Remove(r.remote); err != nil {
		t.Fatal(err)
	}
	r.pg.Stop()
	r.nats.Stop()
	r.kafka.Stop()
	r.s3.Stop()
	r.gcs.Stop()
	r.az.Stop()
	r.lab.SetDown(true)
	r.mongo.Stop()
	r.bq.Stop()
	down := time.Now()
	time.Sleep(8 * time.Second)
	if err := os.Symlink(r.bare, r.remote); err != nil {
		t.Fatal(err)
	}
	if err := r.pg.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := r.nats.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := r.kafka.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := r.s3.Restart(); err != nil {
		t.Fatal(err)
	}
	for _, restart := range []func() error{r.gcs.Restart, r.az.Restart, r.mongo.Restart, r.bq.Restart} {
		if err := restart(); err != nil {
			t.Fatal(err)
		}
	}
	r.lab.SetDown(false)
	t.Logf("sinks down for %s", time.Since(down).Round(time.Millisecond))
	time.Sleep(time.Second)
	writes := stop()
	back := time.Now()
	// The audit connection died with the server.
	r.reconnect(ctx)
	h := r.waitConverged(ctx, r.clusterState(ctx), 5*time.Minute)
	t.Logf("%d churn writes; every sink exact %s after they came back", writes, time.Since(back).Round(time.Millisecond))
	r.noRowEverDropped(len(first.commits), n)
	r.nothingDeleted(ctx, h)
}

// TestFlappingPublishesEveryChange changes one object A→B→A→B, each step
// exported before the next: three messages on NATS and on Kafka, where a
// change id without the export would let the broker drop the third.
func TestFlappingPublishesEveryChange(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "faults-flap")
	r.apply()
	if err := r.put(ctx, "flap", "A"); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.waitConverged(ctx, state{"flap": "A"}, time.Minute)
	for _, v := range []string{"B", "A", "B"} {
		if err := r.put(ctx, "flap", v); err != nil {
			t.Fatal(err)
		}
		r.waitConverged(ctx, state{"flap": v}, time.Minute)
	}
	h, err := r.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name string
		ms   []message
	}{{"NATS", h.nats}, {"Kafka", h.kafka}} {
		var got []string
		for _, m := range s.ms {
			got = append(got, m.Row.Attributes["version"])
		}
		if strings.Join(got, "") != "ABAB" {
			t.Errorf("%s carries %v, want the creation and three changes: A B A B", s.name, got)
		}
	}
	// Deleting the inventory removes its Git mirror from the volume.
	mirrors := filepath.Join(r.dir, "mirrors")
	if left, _ := os.ReadDir(mirrors); len(left) == 0 {
		t.Fatal("no Git mirror under KOLLECT_GIT_MIRROR_DIR while the inventory exists")
	}
	r.teardown()
	eventually(t, 20*time.Second, "the deleted inventory's Git mirror is removed", func() error {
		if left, _ := os.ReadDir(mirrors); len(left) > 0 {
			return fmt.Errorf("%d mirror(s) left", len(left))
		}
		return nil
	})
}

// TestLeaderChangeChangesNothing hands leadership from one manager to a
// standby (the leader stops with SIGTERM and releases its lease): the new
// leader starts from nothing and writes nothing, since nothing changed.
func TestLeaderChangeChangesNothing(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "faults-leader", "--leader-elect=true", "--leader-election-namespace=faults-leader",
		"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=1s")
	r.apply()
	n := min(objects(), 1000)
	want, before := r.seed(ctx, n)
	leader := r.op
	r.start() // the standby
	standby := r.op
	r.op = leader
	if _, err := leader.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	r.op = standby
	handed := time.Now()
	eventually(t, time.Minute, "the new leader acknowledges an export", func() error { return r.exportedSince(handed) })
	time.Sleep(2 * time.Second)
	after, err := r.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := after.converged(want); err != nil {
		t.Fatal(err)
	}
	if len(after.commits) != len(before.commits) || len(after.nats) != len(before.nats) || len(after.kafka) != len(before.kafka) {
		r.noRowEverDropped(len(before.commits), n)
		t.Fatalf("the leader change wrote %d commit(s), %d NATS and %d Kafka message(s)", len(after.commits)-len(before.commits),
			len(after.nats)-len(before.nats), len(after.kafka)-len(before.kafka))
	}
	if ops, err := r.audited(ctx); err != nil || len(ops) != 0 {
		t.Fatalf("the leader change wrote to Postgres: %v (%v)", ops, err)
	}
	t.Logf("leader change: the standby led and acknowledged in %s, nothing written", time.Since(handed).Round(time.Millisecond))
}
