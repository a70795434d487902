package events

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// Envelope modes of an event sink (spec.messages).
const (
	PerRow   = "perRow"
	Envelope = "envelope"
)

// EnvelopeMessage is one message of upstream's envelope mode (Kafka and
// NATS alike): the whole export envelope of one part, for consumers
// written for upstream.
type EnvelopeMessage struct {
	// Key is <cluster>/<namespace> (/<namespace> without a cluster): the
	// inventory's namespace, "cluster" for a cluster inventory.
	Key string
	// Value is {"schemaVersion","timestamp","cluster","namespace","payload"}
	// with the envelope as payload.
	Value []byte
	// ID is the lower-case hex SHA-256 of "<cluster>/<namespace>/" and the
	// envelope: NATS's Nats-Msg-Id, so a re-publish of the same envelope
	// inside the duplicate window is dropped.
	ID string
}

// envelopeFraming bounds what a message adds to its envelope: the value's
// fields and the key.
const envelopeFraming = 1024

// Envelopes are snap's messages in envelope mode, each at most limit bytes
// (0: no limit): none for an empty snapshot (upstream skips it), one per
// part when the envelope must be split. A row whose envelope alone is over
// the limit is set aside with the reason, and the others are sent.
func Envelopes(cluster string, snap *rows.Snapshot, limit int64, now time.Time) ([]EnvelopeMessage, []sinks.Rejection, error) {
	if len(snap.Rows) == 0 {
		return nil, nil, nil
	}
	var ceiling int64
	if limit > 0 {
		ceiling = limit - envelopeFraming - int64(len(cluster)+len(snap.Inventory.Namespace))
	}
	var rejected []sinks.Rejection
	if ceiling > 0 {
		if big := snap.Oversized(snap.Rows, ceiling); len(big) > 0 {
			drop := make(map[rows.Key]bool, len(big))
			for _, e := range big {
				drop[e.Key] = true
				rejected = append(rejected, sinks.Rejection{Key: e.Key.String(),
					Reason: fmt.Sprintf("its envelope alone is %d bytes; the broker accepts messages of %d", e.Size, limit)})
			}
			snap = snap.Without(drop)
		}
	}
	parts, err := rows.Partition(snap, ceiling)
	if err != nil {
		return nil, nil, fmt.Errorf("events: partition the envelope: %w", err)
	}
	ns := snap.Inventory.Namespace
	out := make([]EnvelopeMessage, 0, len(parts))
	for _, p := range parts {
		if len(p.Rows) == 0 {
			continue
		}
		env := p.Envelope("") // the operator leaves the envelope's own cluster empty; only the CLI sets it
		value, err := json.Marshal(struct {
			SchemaVersion string          `json:"schemaVersion"`
			Timestamp     string          `json:"timestamp"`
			Cluster       string          `json:"cluster"`
			Namespace     string          `json:"namespace"`
			Payload       json.RawMessage `json:"payload"`
		}{rows.SchemaVersion, now.UTC().Format(time.RFC3339Nano), cluster, ns, env})
		if err != nil {
			return nil, nil, fmt.Errorf("events: encode the envelope message: %w", err)
		}
		key := cluster + "/" + ns
		sum := sha256.Sum256(append([]byte(key+"/"), env...))
		out = append(out, EnvelopeMessage{Key: key, Value: value, ID: hex.EncodeToString(sum[:])})
	}
	return out, rejected, nil
}
