package nats

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks/events"
)

// A checkpoint bounds recovery: it is the exact state of one scope (key →
// row sum) as of a stream sequence, kept in a JetStream object store beside
// the stream. Recovery reads the checkpoint and only the messages after
// it, however long the stream's history. It is written after every full
// reconcile (the first export after a restart, say, so the next restart
// starts there however quiet the inventory and busy the stream: it costs
// less than the recovery that preceded it), and after an export once at
// least checkpointEvery messages (and at least half the scope's rows) were
// published since the last one, so its cost per message stays constant.
const checkpointEvery = 1000

type checkpoint struct {
	Seq    uint64            `json:"seq"` // the stream sequence the state includes
	State  map[string]string `json:"state"`
	Writer string            `json:"writer,omitempty"` // the operator that published it
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

// maybeCheckpoint records the scope's state after an export of d that
// published published messages, the last at sequence seq, and set aside
// setAside rows; reconciled says the export recovered the scope's state
// from the stream, read up to sequence upto (a full reconcile: the stream
// then holds d.Next for the scope as of the later of seq and upto). The stream then holds exactly d.Next, unless a row was set
// aside since the last full reconcile: the stream still holds that row's
// last published version, which the snapshot does not tell, so no
// checkpoint is written until a full export sets nothing aside.
func (s *Sink) maybeCheckpoint(ctx context.Context, js jetstream.JetStream, scope events.Scope, d *rows.Delta, setAside, published int, seq uint64, reconciled bool, upto uint64) error {
	key := checkpointName(scope)
	s.mu.Lock()
	if s.sinceCheckpoint == nil {
		s.sinceCheckpoint, s.setAside = map[string]int{}, map[string]bool{}
	}
	switch {
	case setAside > 0, d.Next.Partial(): // a kept target's rows are not in d.Next
		s.setAside[key] = true
	case d.Full():
		delete(s.setAside, key)
	}
	s.sinceCheckpoint[key] += published
	reconciled = reconciled && d.Full() && !d.Next.Partial()
	due := !s.setAside[key] && (reconciled || (seq > 0 && s.sinceCheckpoint[key] >= max(checkpointEvery, len(d.Next.Rows)/2)))
	seq = max(seq, upto)
	s.mu.Unlock()
	if !due {
		return nil
	}
	cp := checkpoint{Seq: seq, State: make(map[string]string, len(d.Next.Rows)), Writer: scope.Writer}
	for _, r := range d.Next.Rows {
		cp.State[scope.Key(r)] = r.Sum()
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
