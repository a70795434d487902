package nats_test

import (
	"context"
	"testing"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"kollect.dev/kollect/pipeline/rows"
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
