package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// startsLanding waits until the export of a change has begun: Git, the
// fastest sink, holds a new commit. The slower sinks are then mid-export.
func (r *rig) startsLanding(commits int) {
	r.t.Helper()
	eventually(r.t, 2*time.Minute, "the export starts to land", func() error {
		if len(gitCommits(r.bare)) == commits {
			return fmt.Errorf("no new commit yet")
		}
		return nil
	})
}

// TestAnInventoryDeletedMidExportLeavesNothing deletes the inventory while
// its first export of every object is under way: once it is gone, no sink
// holds a row of it, and none appears afterwards (a cancelled export's
// late write would).
func TestAnInventoryDeletedMidExportLeavesNothing(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "faults-delete")
	r.apply()
	n := objects()
	if err := r.write(ctx, 0, n, "v1"); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.startsLanding(0)
	inv := kollect("KollectInventory", r.ns, "inventory")
	deleted := time.Now()
	if err := env.Client.Delete(ctx, inv); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the inventory is gone (its cleanup done)", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(inv), inv); err == nil {
			return fmt.Errorf("still there (finalizers %v)", inv.GetFinalizers())
		}
		return nil
	})
	t.Logf("deleted mid-export: gone %s later", time.Since(deleted).Round(time.Millisecond))
	for _, when := range []string{"once it is gone", "3 s later"} {
		h, err := r.read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r.recordRead(state{}, h, time.Since(deleted))
		if err := h.converged(state{}); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		time.Sleep(3 * time.Second)
	}
}

// TestASinkEditedAndRotatedMidExportEndsExact edits every sink (a spec
// change: a new binding replaces the one exporting) and rotates every
// Secret while a change to every object is being exported: afterwards
// every sink holds exactly the cluster, and nothing was deleted on the
// way.
func TestASinkEditedAndRotatedMidExportEndsExact(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "faults-edit")
	r.apply()
	n := objects()
	want, first := r.seed(ctx, n)
	if err := r.write(ctx, 0, n, "v2"); err != nil {
		t.Fatal(err)
	}
	for k := range want {
		want[k] = "v2"
	}
	r.startsLanding(len(first.commits))
	edited := time.Now()
	for _, s := range []struct{ kind, name string }{{"KollectSnapshotSink", "git"}, {"KollectSnapshotSink", "bucket"}, {"KollectSnapshotSink", "gcs"},
		{"KollectSnapshotSink", "blob"}, {"KollectSnapshotSink", "lab"}, {"KollectDatabaseSink", "pg"}, {"KollectDatabaseSink", "documents"},
		{"KollectDatabaseSink", "analytics"}, {"KollectEventSink", "bus"}, {"KollectEventSink", "log"}} {
		u := kollect(s.kind, r.ns, s.name)
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"exportMinInterval":"1s"}}`))
		if err := env.Client.Patch(ctx, u, patch); err != nil {
			t.Fatalf("edit %s: %v", s.name, err)
		}
	}
	for _, name := range []string{"dsn", "s3-keys", "azure-key", "gitlab-token", "mongo-uri", "bigquery-key"} {
		sec := &corev1.Secret{}
		sec.SetNamespace(r.ns)
		sec.SetName(name)
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"rotated":"`+time.Now().Format(time.RFC3339Nano)+`"}}}`))
		if err := env.Client.Patch(ctx, sec, patch); err != nil {
			t.Fatalf("rotate %s: %v", name, err)
		}
	}
	h := r.waitConverged(ctx, want, 5*time.Minute)
	t.Logf("every sink edited and every Secret rotated mid-export: exact %s later", time.Since(edited).Round(time.Millisecond))
	r.noRowEverDropped(len(first.commits), n)
	r.nothingDeleted(ctx, h)
}

// TestANamespaceDeletedAtOnceLeavesNoRows deletes the pipeline's namespace
// as the namespace controller does: everything in it at once (the
// inventory, its sinks, their Secrets, the ConfigMaps). The inventory's
// cleanup clears every sink with the backend it last built, whose
// credentials it still holds; within 60 s the inventory is gone and no
// sink holds a row of it. (The test control plane runs no namespace
// controller: the test deletes the namespace's objects itself.)
func TestANamespaceDeletedAtOnceLeavesNoRows(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "faults-namespace")
	r.apply()
	n := min(objects(), 1000)
	r.seed(ctx, n)
	ns := &corev1.Namespace{}
	ns.SetName(r.ns)
	deleted := time.Now()
	if err := env.Client.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{kollect("KollectInventory", r.ns, ""), kollect("KollectTarget", r.ns, ""), kollect("KollectProfile", r.ns, ""),
		kollect("KollectSnapshotSink", r.ns, ""), kollect("KollectDatabaseSink", r.ns, ""), kollect("KollectEventSink", r.ns, ""),
		&corev1.Secret{}, &corev1.ConfigMap{}} {
		if err := env.Client.DeleteAllOf(ctx, obj, client.InNamespace(r.ns)); err != nil {
			t.Fatalf("delete every %T: %v", obj, err)
		}
	}
	inv := kollect("KollectInventory", r.ns, "inventory")
	eventually(t, 60*time.Second, "the inventory is gone", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(inv), inv); err == nil {
			return fmt.Errorf("still there (finalizers %v)", inv.GetFinalizers())
		}
		return nil
	})
	t.Logf("namespace deleted at once: its inventory gone %s later", time.Since(deleted).Round(time.Millisecond))
	h, err := r.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.recordRead(state{}, h, time.Since(deleted))
	if err := h.converged(state{}); err != nil {
		t.Fatal(err)
	}
}
