package kafka_test

import (
	"context"
	"encoding/json"
	"testing"

	"kollect.dev/kollect/internal/servers/kafkatest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/kafka"
)

// In envelope mode (spec.messages: envelope) the topic gets upstream's
// records: one per export, keyed <cluster>/<namespace>, no headers, the
// whole envelope as payload; an empty snapshot publishes nothing, and no
// partial snapshot is accepted (an envelope holds every target's rows).
func TestEnvelopeModePublishesUpstreamsRecords(t *testing.T) {
	fc := kafkatest.Start(t)
	ctx := context.Background()
	s, err := kafka.New(kafka.Config{Brokers: fc.Brokers(), Topic: "envelopes", Cluster: "lab", Envelope: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.KeepsTargets() {
		t.Error("an envelope sink must not take partial snapshots")
	}
	id := rows.Identity{Namespace: "team-a", Name: "inv"}
	first, second := sinktest.Snap(id, sinktest.Rows(30, "1")), sinktest.Snap(id, sinktest.Rows(25, "2"))
	for i, snap := range []*rows.Snapshot{first, second, sinktest.Snap(id, nil)} {
		ack, err := s.Export(ctx, rows.Diff(nil, snap))
		if err != nil {
			t.Fatal(err)
		}
		if want := min(1, len(snap.Rows)); ack.Written != want || ack.Rows != len(snap.Rows) {
			t.Fatalf("export %d: %+v, want %d record(s)", i, ack, want)
		}
	}
	recs := readAll(t, fc, "envelopes")
	if len(recs) != 2 {
		t.Fatalf("topic holds %d records, want 2 (the empty snapshot publishes none)", len(recs))
	}
	for i, snap := range []*rows.Snapshot{first, second} {
		r := recs[i]
		var v struct {
			SchemaVersion, Cluster, Namespace string
			Payload                           json.RawMessage
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatal(err)
		}
		if string(r.Key) != "lab/team-a" || len(r.Headers) != 0 || v.Cluster != "lab" || v.Namespace != "team-a" ||
			string(v.Payload) != string(snap.Envelope("")) {
			t.Errorf("record %d: key %q, %d headers, value %.200s", i, r.Key, len(r.Headers), r.Value)
		}
	}
}
