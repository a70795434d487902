package events_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/events"
)

type envelopeValue struct {
	SchemaVersion string          `json:"schemaVersion"`
	Timestamp     string          `json:"timestamp"`
	Cluster       string          `json:"cluster"`
	Namespace     string          `json:"namespace"`
	Payload       json.RawMessage `json:"payload"`
}

// Upstream's envelope messages: none for an empty snapshot, one per part
// under the broker's limit, keyed <cluster>/<namespace>, the id the hash of
// key and envelope; a row too large alone is set aside.
func TestEnvelopes(t *testing.T) {
	id := rows.Identity{Namespace: "team-a", Name: "inv", Generation: 3}
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	big, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "team-a", TargetName: "shop", Version: "v1", Kind: "ConfigMap"},
		Namespace: "team-a", Name: "huge", UID: "uid-huge"}, rows.AttributesOf(map[string]any{"blob": string(make([]byte, 20_000))}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		cluster  string
		rows     []*rows.Row
		limit    int64
		messages int
		rejected int
	}{
		{"empty", "lab", nil, 0, 0, 0},
		{"one envelope", "lab", sinktest.Rows(50, "1"), 1 << 20, 1, 0},
		{"no cluster", "", sinktest.Rows(5, "1"), 0, 1, 0},
		{"parts", "lab", sinktest.Rows(200, "1"), 8 << 10, 4, 0},
		{"a row too large alone", "lab", append(sinktest.Rows(20, "1"), big), 8 << 10, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := rows.NewSnapshot(id, tc.rows, now)
			msgs, rejected, err := events.Envelopes(tc.cluster, snap, tc.limit, now)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) < tc.messages || (tc.name != "parts" && len(msgs) != tc.messages) || len(rejected) != tc.rejected {
				t.Fatalf("%d messages, %d set aside; want %d and %d", len(msgs), len(rejected), tc.messages, tc.rejected)
			}
			items := 0
			for i, m := range msgs {
				if tc.limit > 0 && int64(len(m.Key)+len(m.Value)) > tc.limit {
					t.Errorf("message %d is %d bytes, over %d", i, len(m.Key)+len(m.Value), tc.limit)
				}
				var v envelopeValue
				if err := json.Unmarshal(m.Value, &v); err != nil {
					t.Fatal(err)
				}
				if m.Key != tc.cluster+"/team-a" || v.SchemaVersion != rows.SchemaVersion || v.Cluster != tc.cluster || v.Namespace != "team-a" ||
					v.Timestamp != "2026-12-07T03:00:00Z" {
					t.Errorf("message %d: key %q value %s", i, m.Key, m.Value)
				}
				sum := sha256.Sum256(append([]byte(m.Key+"/"), v.Payload...))
				if m.ID != hex.EncodeToString(sum[:]) {
					t.Errorf("message %d: id %s is not the hash of key and envelope", i, m.ID)
				}
				var env struct {
					Checksum  string            `json:"checksum"`
					PartIndex int               `json:"partIndex"`
					PartTotal int               `json:"partTotal"`
					ItemCount int               `json:"itemCount"`
					Cluster   *string           `json:"cluster"`
					Items     []json.RawMessage `json:"items"`
				}
				if err := json.Unmarshal(v.Payload, &env); err != nil {
					t.Fatal(err)
				}
				if env.Cluster != nil || env.ItemCount != len(env.Items) || (len(msgs) > 1 && (env.PartIndex != i+1 || env.PartTotal != len(msgs))) {
					t.Errorf("envelope %d: %+v", i, env)
				}
				items += env.ItemCount
			}
			if want := len(tc.rows) - tc.rejected; items != want {
				t.Errorf("the envelopes carry %d items, want %d", items, want)
			}
			if len(msgs) == 1 && tc.rejected == 0 {
				var v envelopeValue
				_ = json.Unmarshal(msgs[0].Value, &v)
				if string(v.Payload) != string(snap.Envelope("")) {
					t.Errorf("a single message's payload is not the export envelope")
				}
			}
		})
	}
}
