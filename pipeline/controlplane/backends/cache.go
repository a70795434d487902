package backends

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks"
)

// Cache builds sink backends and keeps them while their configuration
// (sink generation, Secret versions, replay request) is unchanged, so a
// reconcile does not restart a sink actor, drop a Git mirror or reconnect
// a database.
type Cache struct {
	Registry *Registry
	StateDir string

	mu    sync.Mutex
	built map[string]built
}

type built struct {
	fingerprint string
	backend     sinks.Backend
	dir         string // its state (a Git mirror) under StateDir, or ""
}

func (c *Cache) lookup(owner, fingerprint string) sinks.Backend {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.built[owner]; ok && e.fingerprint == fingerprint {
		return e.backend
	}
	return nil
}

func (c *Cache) store(owner, fingerprint string, b sinks.Backend, dir string) sinks.Backend {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.built == nil {
		c.built = map[string]built{}
	}
	if old, ok := c.built[owner]; ok {
		closeBackend(old.backend)
	}
	// A rebuilt backend (new credentials, a new sink generation) keeps
	// the state directory; only a forgotten owner loses it.
	c.built[owner] = built{fingerprint: fingerprint, backend: b, dir: dir}
	return b
}

// Forget drops (and closes) the backends of an owner ("namespace/name")
// that is gone, and removes their state directories: a deleted
// inventory's Git mirrors do not stay on the volume.
func (c *Cache) Forget(owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, b := range c.built {
		if strings.HasPrefix(key, owner+"|") {
			closeBackend(b.backend)
			if b.dir != "" {
				_ = os.RemoveAll(b.dir)
			}
			delete(c.built, key)
		}
	}
}

// Backend returns the backend owner (an inventory binding) uses for sink,
// building it when its configuration changed. A sink that cannot be built
// yields a backend whose exports fail with the reason, so the binding's
// status says what to fix.
func (c *Cache) Backend(ctx context.Context, cl client.Reader, owner string, sink client.Object) sinks.Backend {
	t, err := c.Registry.Type(sink)
	if err != nil {
		return c.failing(owner, err.Error())
	}
	creds, err := c.Registry.credentials(ctx, cl, sink)
	if err != nil {
		return c.failing(owner, err.Error())
	}
	fp := fingerprint(sink, creds)
	if b := c.lookup(owner, fp); b != nil {
		return b
	}
	dir := ""
	if c.StateDir != "" {
		sum := sha256.Sum256([]byte(owner + "|" + sink.GetNamespace() + "/" + sink.GetName()))
		dir = filepath.Join(c.StateDir, hex.EncodeToString(sum[:8]))
	}
	b, err := t.Build(ctx, sink, creds, Env{Policy: c.Registry.Policy, StateDir: dir, Ambient: creds.Ambient})
	if err != nil {
		return c.failing(owner, err.Error())
	}
	return c.store(owner, fp, b, dir)
}

// failing returns a backend whose exports fail permanently with msg, kept
// stable per owner so the binding's actor is not restarted needlessly.
func (c *Cache) failing(owner, msg string) sinks.Backend {
	fp := "failing/" + msg
	if b := c.lookup(owner, fp); b != nil {
		return b
	}
	return c.store(owner, fp, failing{err: sinks.Permanent(errors.New(msg))}, "")
}

type failing struct{ err error }

func (f failing) Export(context.Context, *rows.Delta) (sinks.Ack, error) { return sinks.Ack{}, f.err }

// closer is a backend holding connections.
type closer interface{ Close() }

func closeBackend(b sinks.Backend) {
	if c, ok := b.(closer); ok {
		c.Close()
	}
}
