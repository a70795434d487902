package inventory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/rows"
	"kollect.dev/kollect/sinks"
)

// SnapshotFactory builds the backend of one snapshot sink type from the
// sink, its resolved credentials and a state directory of its own.
type SnapshotFactory func(ctx context.Context, s *kollectv1alpha1.KollectSnapshotSink, secret map[string][]byte, stateDir string) (sinks.Snapshot, error)

// Registry maps sink types to factories; backends are registered by the
// process wiring, not by themselves.
type Registry struct {
	Snapshot map[string]SnapshotFactory
}

// Backends builds sink backends and keeps them while their configuration
// (sink generation, Secret version) is unchanged, so a reconcile does not
// restart a sink actor or drop a Git mirror's state.
type Backends struct {
	Registry Registry
	StateDir string

	mu    sync.Mutex
	built map[string]built
}

type built struct {
	fingerprint string
	backend     sinks.Snapshot
}

func (b *Backends) lookup(owner, fingerprint string) sinks.Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.built[owner]; ok && e.fingerprint == fingerprint {
		return e.backend
	}
	return nil
}

func (b *Backends) store(owner, fingerprint string, s sinks.Snapshot) sinks.Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.built == nil {
		b.built = map[string]built{}
	}
	b.built[owner] = built{fingerprint: fingerprint, backend: s}
	return s
}

// Forget drops the backends of an owner ("namespace/name") that is gone.
func (b *Backends) Forget(owner string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for key := range b.built {
		if strings.HasPrefix(key, owner+"|") {
			delete(b.built, key)
		}
	}
}

// snapshot returns the backend for a snapshot sink, building it when its
// configuration changed.
func (b *Backends) snapshot(ctx context.Context, owner, typ string, s *kollectv1alpha1.KollectSnapshotSink, secret map[string][]byte, secretVersion string) (sinks.Snapshot, error) {
	factory := b.Registry.Snapshot[typ]
	if factory == nil {
		return nil, fmt.Errorf("%s sinks are not implemented in this version of Kollect", typ)
	}
	fp := fmt.Sprintf("%s/%d/%s", typ, s.Generation, secretVersion)
	if be := b.lookup(owner, fp); be != nil {
		return be, nil
	}
	dir := ""
	if b.StateDir != "" {
		sum := sha256.Sum256([]byte(owner + "|" + s.Namespace + "/" + s.Name))
		dir = filepath.Join(b.StateDir, hex.EncodeToString(sum[:8]))
	}
	be, err := factory(ctx, s, secret, dir)
	if err != nil {
		return nil, err
	}
	return b.store(owner, fp, be), nil
}

// failing returns a backend whose exports fail permanently with msg, kept
// stable per owner so the binding's actor is not restarted needlessly.
func (b *Backends) failing(owner, msg string) sinks.Snapshot {
	fp := "failing/" + msg
	if be := b.lookup(owner, fp); be != nil {
		return be
	}
	return b.store(owner, fp, failingBackend{err: sinks.Permanent(errors.New(msg))})
}

type failingBackend struct{ err error }

func (f failingBackend) Export(context.Context, *rows.Snapshot) (sinks.Ack, error) {
	return sinks.Ack{}, f.err
}
