package nats

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"kollect.dev/kollect/model/rows"
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

// readCheckpoint returns the scope's checkpoint, nil when it has none or an
// unreadable one. stale says the stream's limits dropped messages after
// it: the checkpoint still names every key the scope held then, but not
// what became of them in the messages that are gone.
func (s *Sink) readCheckpoint(ctx context.Context, js jetstream.JetStream, scope events.Scope, first uint64) (cp *checkpoint, stale bool, err error) {
	os, err := s.objectStore(ctx, js)
	if err != nil || os == nil {
		return nil, false, err
	}
	data, err := os.GetBytes(ctx, checkpointName(scope))
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	cp = &checkpoint{}
	if err := json.Unmarshal(data, cp); err != nil || cp.State == nil {
		return nil, false, nil // unreadable: read everything
	}
	return cp, cp.Seq+1 < first, nil
}

// unknownSums is a stale checkpoint's state with every key kept and no
// content known: the reconcile that follows republishes each live row and
// deletes each key that is gone, rather than trust what the dropped
// messages may have changed. Republishing costs a message per live row;
// trusting could lose a delete.
func unknownSums(state map[string]string) map[string]string {
	out := make(map[string]string, len(state))
	for k := range state {
		out[k] = ""
	}
	return out
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
	s.track(key, scope, d.Next, reconciled)
	s.mu.Unlock()
	if !due {
		return nil
	}
	return s.writeCheckpoint(ctx, js, key, scope, d.Next, seq)
}

// writeCheckpoint records snap as the scope's state as of stream sequence
// seq.
func (s *Sink) writeCheckpoint(ctx context.Context, js jetstream.JetStream, key string, scope events.Scope, snap *rows.Snapshot, seq uint64) error {
	cp := checkpoint{Seq: seq, State: make(map[string]string, len(snap.Rows)), Writer: scope.Writer}
	for _, r := range snap.Rows {
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
	if e := s.exact[key]; e != nil {
		e.checkpointed = s.cfg.Clock.Now()
	}
	s.mu.Unlock()
	return nil
}
