package nats_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"kollect.dev/kollect/internal/servers/natstest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/events"
	"kollect.dev/kollect/sinks/nats"
)

// Recovery reads the checkpoint and only the messages after it: with the
// history before the checkpoint purged, a restarted sink still knows every
// row and republishes nothing, and a change made after the checkpoint is
// known too.
func TestRecoveryStartsFromTheCheckpoint(t *testing.T) {
	ts := natstest.Start(t)
	ctx := context.Background()
	id := rows.Identity{Namespace: "default", Name: "inv"}
	cfg := nats.Config{URL: ts.URL(), Subject: "inv", Stream: "history"}
	first, err := nats.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := &sinktest.Binding{Backend: first}
	v1 := sinktest.Rows(1500, "1") // enough messages for a checkpoint
	if _, err := b.Export(ctx, sinktest.Snap(id, v1)); err != nil {
		t.Fatal(err)
	}
	v2 := append(sinktest.Rows(3, "2"), v1[3:1499]...) // 3 changed, 1 deleted
	last := sinktest.Snap(id, v2)
	if _, err := b.Export(ctx, last); err != nil {
		t.Fatal(err)
	}
	first.Close()

	st := stream(t, ts.URL(), "history")
	// Drop the history the checkpoint covers: the first export's messages.
	if err := st.Purge(ctx, jetstream.WithPurgeSequence(1501)); err != nil {
		t.Fatal(err)
	}
	info, _ := st.Info(ctx)
	if info.State.Msgs != 4 {
		t.Fatalf("stream holds %d messages after the purge, want the 4 changes after the checkpoint", info.State.Msgs)
	}
	restarted, err := nats.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Close()
	ack, err := restarted.Export(ctx, rows.Diff(nil, last))
	if err != nil {
		t.Fatal(err)
	}
	if ack.Written != 0 {
		t.Fatalf("a restart republished %d messages: recovery did not start from the checkpoint", ack.Written)
	}
}

// A row set aside (too large to publish) leaves its last published version
// in the stream, which a checkpoint of the exported snapshot would not
// hold: after a restart, the object's deletion would then never be
// published. No checkpoint is written while a row is set aside, so the
// restarted sink still deletes it.
func TestACheckpointNeverHidesARowSetAside(t *testing.T) {
	// Above the object store's 128 KiB chunks, so checkpoints can be written.
	ts := natstest.Start(t, func(o *server.Options) { o.MaxPayload = 256 << 10 })
	ctx := context.Background()
	id := rows.Identity{Namespace: "default", Name: "inv"}
	cfg := nats.Config{URL: ts.URL(), Subject: "inv", Stream: "aside"}
	first, err := nats.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := &sinktest.Binding{Backend: first}
	grown := func(size int) *rows.Row {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: "t", Version: "v1", Kind: "ConfigMap"}, Namespace: "default", Name: "grows",
			UID: "uid-grows"}, rows.AttributesOf(map[string]any{"blob": strings.Repeat("x", size)}))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if _, err := b.Export(ctx, sinktest.Snap(id, append(sinktest.Rows(1500, "1"), grown(10)))); err != nil {
		t.Fatal(err)
	}
	// Every row changes (enough messages for a checkpoint); "grows" is now
	// too large and is set aside: the stream keeps its small version.
	ack, err := b.Export(ctx, sinktest.Snap(id, append(sinktest.Rows(1500, "2"), grown(300<<10))))
	if err != nil || len(ack.Rejected) != 1 {
		t.Fatalf("want one row set aside, got %+v (%v)", ack.Rejected, err)
	}
	first.Close()
	// After a restart the object is gone: its delete must be published.
	restarted, err := nats.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Close()
	if _, err := restarted.Export(ctx, rows.Diff(nil, sinktest.Snap(id, sinktest.Rows(1500, "2")))); err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, m := range readAll(t, ts.URL(), "aside") {
		switch k := m.Header.Get(events.HeaderKey); m.Header.Get(events.HeaderChange) {
		case events.Upsert:
			live[k] = true
		case events.Delete:
			delete(live, k)
		}
	}
	if len(live) != 1500 {
		t.Fatalf("the stream holds %d live rows, want 1500: the row set aside was never deleted", len(live))
	}
}

// A quiet inventory on a busy shared stream: its first export after a
// start writes a checkpoint at the stream's end, though it published a
// handful of messages, so the restart after that reads none of the others'
// history. With that history purged, a restarted sink still knows its
// rows and republishes nothing.
func TestAFullReconcileCheckpointsAQuietInventory(t *testing.T) {
	ts := natstest.Start(t)
	ctx := context.Background()
	cfg := nats.Config{URL: ts.URL(), Subject: "shared", Stream: "busy"}
	quiet, busy := rows.Identity{Namespace: "team-q", Name: "inv"}, rows.Identity{Namespace: "team-b", Name: "inv"}
	export := func(id rows.Identity, snap *rows.Snapshot) sinks.Ack {
		t.Helper()
		s, err := nats.New(cfg) // a new sink: a restarted operator
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ack, err := s.Export(ctx, rows.Diff(nil, snap))
		if err != nil {
			t.Fatal(err)
		}
		return ack
	}
	mine := sinktest.Snap(quiet, sinktest.Rows(10, "1"))
	if ack := export(quiet, mine); ack.Written != 10 {
		t.Fatalf("the first export published %d messages, want 10", ack.Written)
	}
	export(busy, sinktest.Snap(busy, sinktest.Rows(3000, "1")))
	// The restart: nothing changed for the quiet inventory.
	if ack := export(quiet, mine); ack.Written != 0 {
		t.Fatalf("a restart republished %d messages", ack.Written)
	}
	if err := stream(t, ts.URL(), "busy").Purge(ctx); err != nil { // the whole history, the quiet one's rows included
		t.Fatal(err)
	}
	if ack := export(quiet, mine); ack.Written != 0 {
		t.Fatalf("after the purge a restart republished %d messages: recovery did not start from the reconcile's checkpoint", ack.Written)
	}
}

// stream opens a stream of the server at url, on a connection of the
// test's own.
func stream(t *testing.T, url, name string) jetstream.Stream {
	t.Helper()
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
