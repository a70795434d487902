package nats_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks/events"
	"kollect.dev/kollect/sinks/nats"
	"kollect.dev/kollect/sinks/nats/natstest"
	"kollect.dev/kollect/sinks/sinktest"
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

	nc, err := natsgo.Connect(ts.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	st, err := js.Stream(ctx, "history")
	if err != nil {
		t.Fatal(err)
	}
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
