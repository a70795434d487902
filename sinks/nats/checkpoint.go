package nats

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"kollect.dev/kollect/pipeline/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/events"
)

// A checkpoint bounds recovery: it is the exact state of one scope (key →
// row sum) as of a stream sequence, kept in a JetStream object store beside
// the stream. Recovery reads the checkpoint and only the messages after
// it, however long the stream's history. It is written after an export
// once at least checkpointEvery messages (and at least half the scope's
// rows) were published since the last one, so its cost per message stays
// constant.
const checkpointEvery = 1000

type checkpoint struct {
	Seq   uint64            `json:"seq"` // the stream sequence the state includes
	State map[string]string `json:"state"`
}

// checkpointBucket names the object store of a stream's checkpoints.
func (s *Sink) checkpointBucket() string { return s.cfg.Stream + "_kollect_checkpoints" }

func checkpointName(scope events.Scope) string {
	sum := sha256.Sum256([]byte(scope.Cluster + "\x00" + scope.Inventory.Namespace + "/" + scope.Inventory.Name))
	return hex.EncodeToString(sum[:16])
}

// objectStore opens the checkpoint store, creating it in ensure mode; nil
// when there is none (existing mode without one): recovery then reads the
// whole history.
func (s *Sink) objectStore(ctx context.Context, js jetstream.JetStream) (jetstream.ObjectStore, error) {
	if s.cfg.Existing {
		os, err := js.ObjectStore(ctx, s.checkpointBucket())
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, nil
		}
		return os, err
	}
	return js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: s.checkpointBucket(),
		Description: "kollect: the state of each inventory's rows in stream " + s.cfg.Stream + ", so recovery need not read its whole history"})
}

// readCheckpoint returns the scope's checkpoint when it is usable: the
// messages after it are still in the stream.
func (s *Sink) readCheckpoint(ctx context.Context, js jetstream.JetStream, scope events.Scope, first uint64) (*checkpoint, error) {
	os, err := s.objectStore(ctx, js)
	if err != nil || os == nil {
		return nil, err
	}
	data, err := os.GetBytes(ctx, checkpointName(scope))
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cp checkpoint
	if err := json.Unmarshal(data, &cp); err != nil || cp.State == nil || cp.Seq+1 < first {
		return nil, nil // unreadable, or the stream dropped messages after it: read everything
	}
	return &cp, nil
}

// maybeCheckpoint records the scope's state after an export that left the
// stream holding exactly next (less what was set aside) at sequence seq.
// published is how many messages the export published.
func (s *Sink) maybeCheckpoint(ctx context.Context, js jetstream.JetStream, scope events.Scope, next *rows.Snapshot, rejected []sinks.Rejection,
	published int, seq uint64) error {
	key := checkpointName(scope)
	s.mu.Lock()
	if s.sinceCheckpoint == nil {
		s.sinceCheckpoint = map[string]int{}
	}
	s.sinceCheckpoint[key] += published
	due := seq > 0 && s.sinceCheckpoint[key] >= max(checkpointEvery, len(next.Rows)/2)
	s.mu.Unlock()
	if !due {
		return nil
	}
	skip := make(map[string]bool, len(rejected))
	for _, r := range rejected {
		skip[r.Key] = true
	}
	cp := checkpoint{Seq: seq, State: make(map[string]string, len(next.Rows))}
	for _, r := range next.Rows {
		if !skip[r.Key().String()] {
			cp.State[scope.Key(r)] = r.Sum()
		}
	}
	data, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	os, err := s.objectStore(ctx, js)
	if err != nil || os == nil {
		return err
	}
	if _, err := os.PutBytes(ctx, key, data); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	s.mu.Lock()
	s.sinceCheckpoint[key] = 0
	s.mu.Unlock()
	return nil
}
