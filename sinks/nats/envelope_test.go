package nats_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"kollect.dev/kollect/internal/servers/natstest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/events"
	"kollect.dev/kollect/sinks/nats"
)

// In envelope mode the stream gets upstream's messages: one per export,
// the envelope as payload, Nats-Msg-Id the hash of key and envelope, so the
// same envelope published again (a restart's first export) is dropped by
// the server inside its duplicate window.
func TestEnvelopeModePublishesUpstreamsMessages(t *testing.T) {
	ts := natstest.Start(t)
	s, err := nats.New(nats.Config{URL: ts.URL(), Subject: "inv", Stream: "envelopes", Cluster: "lab", Envelope: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.KeepsTargets() {
		t.Error("an envelope sink must not take partial snapshots")
	}
	id := rows.Identity{Namespace: "team-a", Name: "inv"}
	snap := sinktest.Snap(id, sinktest.Rows(30, "1"))
	ctx := context.Background()
	for range 2 {
		if ack, err := s.Export(ctx, rows.Diff(nil, snap)); err != nil || ack.Written != 1 {
			t.Fatalf("export: %+v %v", ack, err)
		}
	}
	if ack, err := s.Export(ctx, rows.Diff(snap, sinktest.Snap(id, nil))); err != nil || ack.Written != 0 {
		t.Fatalf("an empty snapshot: %+v %v, want nothing published", ack, err)
	}
	msgs := readAll(t, ts.URL(), "envelopes")
	if len(msgs) != 1 {
		t.Fatalf("stream holds %d messages, want 1 (the identical re-publish dropped)", len(msgs))
	}
	want, _, _ := events.Envelopes("lab", snap, 0, snap.ExportedAt)
	var v struct {
		Cluster, Namespace string
		Payload            json.RawMessage
	}
	if err := json.Unmarshal(msgs[0].Data, &v); err != nil {
		t.Fatal(err)
	}
	if got := msgs[0].Header.Get(jetstream.MsgIDHeader); got != want[0].ID || v.Cluster != "lab" || v.Namespace != "team-a" || string(v.Payload) != string(snap.Envelope("")) {
		t.Fatalf("message: id %q (want %q), value %.200s", got, want[0].ID, msgs[0].Data)
	}
}
