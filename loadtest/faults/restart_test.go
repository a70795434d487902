package faults

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kollect.dev/kollect/internal/testenv"
)

// waitConverged waits until every sink holds exactly want, and returns
// their history. It records, per sink, how long it took to hold want (and
// stay so), and what was still wrong when it gave up (see report).
func (r *rig) waitConverged(ctx context.Context, want state, timeout time.Duration) *history {
	r.t.Helper()
	var h *history
	start := time.Now()
	exact := map[string]time.Duration{} // sink → since when it has held want
	defer func() {
		if h != nil {
			r.record(want, h, exact)
		}
	}()
	eventually(r.t, timeout, "every sink holds the cluster's rows", func() error {
		read, err := r.read(ctx)
		if err != nil {
			return err
		}
		h = read
		for name, got := range h.states() {
			if want.diff(got) != "" {
				delete(exact, name)
			} else if _, ok := exact[name]; !ok {
				exact[name] = time.Since(start)
			}
		}
		return h.converged(want)
	})
	r.t.Logf("converged in %s: %d commits, %d NATS and %d Kafka messages", time.Since(start).Round(time.Millisecond), len(h.commits), len(h.nats), len(h.kafka))
	return h
}

func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	testenv.Eventually(t, timeout, what, check)
}

// seed creates n ConfigMaps at v1, starts the operator, waits until every
// sink holds them and starts recording Postgres writes: the state every
// scenario starts from.
func (r *rig) seed(ctx context.Context, n int) (state, *history) {
	r.t.Helper()
	want := state{}
	for i := range n {
		want[name(i)] = "v1"
	}
	if err := r.write(ctx, 0, n, "v1"); err != nil {
		r.t.Fatal(err)
	}
	r.start()
	r.seeding = true
	h := r.waitConverged(ctx, want, 5*time.Minute)
	r.seeding = false
	if err := r.auditPostgres(ctx); err != nil {
		r.t.Fatal(err)
	}
	return want, h
}

// noRowEverDropped walks every commit after the first `from` and fails when
// one holds fewer than n files: a wipe that was repaired later shows here.
func (r *rig) noRowEverDropped(from, n int) {
	r.t.Helper()
	commits := gitCommits(r.bare)
	for _, c := range commits[from:] {
		files, err := gitFiles(r.bare, c)
		if err != nil {
			r.t.Fatal(err)
		}
		if files < n {
			subject, _ := git(r.bare, "log", "-1", "--format=%s", c)
			r.t.Fatalf("commit %s (%q) holds %d files, fewer than the %d rows exported before", c[:10], subject, files, n)
		}
	}
}

func deletes(ms []message) int {
	n := 0
	for _, m := range ms {
		if m.Change == "delete" {
			n++
		}
	}
	return n
}

// TestRestartChangesNothingInAnySink exports N ConfigMaps, then stops the
// manager (SIGTERM, then SIGKILL) and starts it again with nothing
// changed: no commit, no row deleted or rewritten, no message.
func TestRestartChangesNothingInAnySink(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "faults-restart")
	r.apply()
	n := objects()
	want, before := r.seed(ctx, n)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			r.t = t
			if sig == syscall.SIGTERM {
				took, err := r.op.Stop(10 * time.Second)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("SIGTERM: the manager exited in %s", took.Round(time.Millisecond))
			} else {
				r.op.Kill()
			}
			inv, tgt := r.watchStatus("kollectinventories", "inventory"), r.watchStatus("kollecttargets", "configmaps")
			restarted := time.Now()
			r.start()
			eventually(t, 2*time.Minute, "every binding acknowledges an export after the restart", func() error { return r.exportedSince(restarted) })
			time.Sleep(2 * time.Second) // anything the restart would write lands by now
			// Status says what the sinks hold, and a restart changes none:
			// the inventory stays Synced throughout (its acknowledgements
			// move on), the target's status is not written at all.
			if flips := notSynced(inv.finish()); len(flips) != 0 {
				t.Errorf("the inventory's status stopped saying Synced during the restart: %s", strings.Join(flips, "; "))
			}
			if written := tgt.finish(); len(written) != 1 {
				t.Errorf("the restart wrote the target's status %d time(s), want none (the watch's first event is the stored version)", len(written)-1)
			}
			after, err := r.read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r.recordRead(want, after, time.Since(restarted))
			if err := after.converged(want); err != nil {
				t.Fatal(err)
			}
			if len(after.commits) != len(before.commits) {
				r.noRowEverDropped(len(before.commits), n)
				t.Fatalf("the restart made %d commit(s)", len(after.commits)-len(before.commits))
			}
			if len(after.nats) != len(before.nats) || len(after.kafka) != len(before.kafka) {
				t.Fatalf("the restart published %d NATS and %d Kafka message(s)", len(after.nats)-len(before.nats), len(after.kafka)-len(before.kafka))
			}
			if w := rewrote(before, after); len(w) != 0 {
				t.Fatalf("the restart wrote to %v", w)
			}
			ops, err := r.audited(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ops) != 0 {
				t.Fatalf("the restart wrote to Postgres: %v", ops)
			}
			t.Logf("restart after %s: ready and acknowledged in %s, nothing written", sig, time.Since(restarted).Round(time.Millisecond))
		})
	}
}

// TestKilledMidExportLosesAndDropsNothing kills the manager (SIGKILL, then
// SIGTERM) while it exports a change to every object: after the restart
// every sink converges, no commit ever holds fewer rows, no row is deleted
// in Postgres and no stream carries a delete.
func TestKilledMidExportLosesAndDropsNothing(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "faults-kill")
	r.apply()
	n := objects()
	want, first := r.seed(ctx, n)
	for i, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		version := fmt.Sprintf("v%d", i+2)
		commits := len(gitCommits(r.bare))
		if err := r.write(ctx, 0, n, version); err != nil {
			t.Fatal(err)
		}
		// Stop as soon as the change starts to land.
		eventually(t, time.Minute, "the change starts to export", func() error {
			if len(gitCommits(r.bare)) == commits {
				return fmt.Errorf("no new commit yet")
			}
			return nil
		})
		if sig == syscall.SIGKILL {
			r.op.Kill()
		} else if took, err := r.op.Stop(10 * time.Second); err != nil {
			t.Fatal(err)
		} else {
			t.Logf("SIGTERM during an export: exited in %s", took.Round(time.Millisecond))
		}
		for k := range want {
			want[k] = version
		}
		killed := time.Now()
		r.start()
		h := r.waitConverged(ctx, want, 5*time.Minute)
		t.Logf("%s mid-export: every sink exact %s after the restart", sig, time.Since(killed).Round(time.Millisecond))
		r.noRowEverDropped(len(first.commits), n)
		r.nothingDeleted(ctx, h)
	}
}

// condition reads one condition of the inventory's status.
func (r *rig) condition(typ string) (status, reason string, err error) {
	st, err := r.inventoryStatus()
	if err != nil {
		return "", "", err
	}
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			rs, _ := m["reason"].(string)
			return s, rs, nil
		}
	}
	return "", "", nil
}

// TestARestartWhileATargetIsDegradedChangesNothing degrades the target
// (its profile deleted, or a KollectScope refusing its kind: either way it
// is frozen), restarts the manager, then lets the target recover: the
// restarted manager exports without it only to sinks that keep its rows
// as they are (partial snapshots), the others wait, and nothing is
// written to any sink at any point.
func TestARestartWhileATargetIsDegradedChangesNothing(t *testing.T) {
	profile := &unstructured.Unstructured{}
	profile.SetGroupVersionKind(schema.GroupVersionKind{Group: "kollect.dev", Version: "v1alpha1", Kind: "KollectProfile"})
	profile.SetName("configmaps")
	scope := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"allowedGVKs": []any{map[string]any{"group": "", "version": "v1", "kind": "Secret"}}}}}
	scope.SetGroupVersionKind(schema.GroupVersionKind{Group: "kollect.dev", Version: "v1alpha1", Kind: "KollectScope"})
	scope.SetName("secrets-only")
	for _, tc := range []struct {
		name, ns string
		degrade  func(ctx context.Context, r *rig) error
		recover  func(ctx context.Context, r *rig) error
	}{
		{"profile deleted", "faults-degraded",
			func(ctx context.Context, r *rig) error {
				profile.SetNamespace(r.ns)
				return env.Client.Delete(ctx, profile)
			},
			func(_ context.Context, r *rig) error { r.apply(); return nil }},
		{"kind refused by a scope", "faults-scope",
			func(ctx context.Context, r *rig) error {
				scope.SetNamespace(r.ns)
				return env.Client.Create(ctx, scope.DeepCopy())
			},
			func(ctx context.Context, r *rig) error {
				scope.SetNamespace(r.ns)
				return env.Client.Delete(ctx, scope.DeepCopy())
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := newRig(t, tc.ns)
			r.apply()
			n := min(objects(), 1000)
			want, before := r.seed(ctx, n)
			if err := tc.degrade(ctx, r); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second) // the target degrades and freezes
			if _, err := r.op.Stop(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			r.start()
			eventually(t, time.Minute, "the restarted inventory holds its degraded target", func() error {
				if s, reason, err := r.condition("Synced"); err != nil || s != "False" || reason != "WaitingForTargets" {
					return fmt.Errorf("Synced=%s/%s (%v)", s, reason, err)
				}
				return nil
			})
			time.Sleep(2 * time.Second) // several batch windows: an export would have happened
			unchanged := func(when string) {
				t.Helper()
				h, err := r.read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := h.converged(want); err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				if len(h.commits) != len(before.commits) || len(h.nats) != len(before.nats) || len(h.kafka) != len(before.kafka) {
					r.noRowEverDropped(len(before.commits), n)
					t.Fatalf("%s: %d commit(s), %d NATS and %d Kafka message(s) written", when, len(h.commits)-len(before.commits),
						len(h.nats)-len(before.nats), len(h.kafka)-len(before.kafka))
				}
				if ops, err := r.audited(ctx); err != nil || len(ops) != 0 {
					t.Fatalf("%s: Postgres writes %v (%v)", when, ops, err)
				}
				if w := rewrote(before, h); len(w) != 0 {
					t.Fatalf("%s: written to %v", when, w)
				}
			}
			unchanged("while the target is degraded after a restart")
			recovered := time.Now()
			if err := tc.recover(ctx, r); err != nil {
				t.Fatal(err)
			}
			eventually(t, time.Minute, "every binding acknowledges an export once the target lists", func() error { return r.exportedSince(recovered) })
			time.Sleep(2 * time.Second)
			unchanged("after the target recovered")
		})
	}
}
