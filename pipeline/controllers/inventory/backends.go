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
	"kollect.dev/kollect/pipeline/endpoint"
	"kollect.dev/kollect/pipeline/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
)

// Backends builds sink backends and keeps them while their configuration
// (sink generation, Secret version) is unchanged, so a reconcile does not
// restart a sink actor or drop a Git mirror's state.
type Backends struct {
	Policy    endpoint.Policy
	MirrorDir string

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

func (b *Backends) git(ctx context.Context, owner string, s *kollectv1alpha1.KollectSnapshotSink, secret map[string][]byte, secretVersion string) (sinks.Snapshot, error) {
	fp := fmt.Sprintf("git/%d/%s", s.Generation, secretVersion)
	if be := b.lookup(owner, fp); be != nil {
		return be, nil
	}
	url, _, err := git.Endpoint(&s.Spec)
	if err != nil {
		return nil, err
	}
	if err := b.Policy.CheckURL(ctx, url, "https", "http", "file"); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(owner + "|" + url))
	mirror := ""
	if b.MirrorDir != "" {
		mirror = filepath.Join(b.MirrorDir, hex.EncodeToString(sum[:8]))
	}
	cfg, err := git.FromSpec(s.Name, &s.Spec, secret, mirror)
	if err != nil {
		return nil, err
	}
	sk, err := git.New(cfg)
	if err != nil {
		return nil, err
	}
	return b.store(owner, fp, sk), nil
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
