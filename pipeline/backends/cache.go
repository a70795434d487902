package backends

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/model/rows"
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
	seq   uint64 // the last id given to a built backend
}

type built struct {
	fingerprint string
	backend     sinks.Backend
	id          string // unique among every backend this cache built
	dir         string // its state (a Git mirror) under StateDir, or ""
	// lastGood is the last backend that could be built, kept while a
	// failing one stands in for it (its sink or Secret gone or broken):
	// the cleanup of an inventory deleted with its namespace, whose sink
	// and Secret go at the same time, still clears its rows with it.
	lastGood sinks.Backend
}

func (c *Cache) lookup(owner, fingerprint string) (sinks.Backend, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.built[owner]; ok && e.fingerprint == fingerprint {
		return e.backend, e.id
	}
	return nil, ""
}

func (c *Cache) store(owner, fingerprint string, b sinks.Backend, dir string) (sinks.Backend, string) {
	var replaced []sinks.Backend
	defer func() { closeLater(replaced) }()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.built == nil {
		c.built = map[string]built{}
	}
	c.seq++
	entry := built{fingerprint: fingerprint, backend: b, dir: dir, id: strconv.FormatUint(c.seq, 10)}
	if old, ok := c.built[owner]; ok {
		_, bad := b.(failing)
		_, oldBad := old.backend.(failing)
		switch {
		case bad && !oldBad:
			entry.lastGood = old.backend // kept, not closed
		case bad:
			entry.lastGood = old.lastGood
		default:
			replaced = append(replaced, old.backend, old.lastGood)
		}
		if entry.dir == "" {
			entry.dir = old.dir
		}
	}
	// A rebuilt backend (new credentials, a new sink generation) keeps
	// the state directory; only a forgotten owner loses it.
	c.built[owner] = entry
	return b, entry.id
}

// ForCleanup returns the backend that clears owner's rows from sink (nil:
// the sink object is gone): the one built from the sink and its
// credentials when they can be read, else the last one built for owner
// that worked, which still holds the credentials it was built with. nil
// when neither exists (the sink is gone and nothing was built since the
// manager started).
func (c *Cache) ForCleanup(ctx context.Context, cl client.Reader, owner string, sink client.Object) sinks.Backend {
	var b sinks.Backend
	if sink != nil {
		if b = c.Backend(ctx, cl, owner, sink); !isFailing(b) {
			return b
		}
	}
	c.mu.Lock()
	e, ok := c.built[owner]
	c.mu.Unlock()
	switch {
	case ok && !isFailing(e.backend):
		return e.backend
	case ok && e.lastGood != nil:
		return e.lastGood
	}
	return b
}

func isFailing(b sinks.Backend) bool {
	_, bad := b.(failing)
	return bad
}

// Forget drops (and closes) the backends of an owner ("namespace/name")
// that is gone, and removes their state directories: a deleted
// inventory's Git mirrors do not stay on the volume.
func (c *Cache) Forget(owner string) {
	var gone []sinks.Backend
	defer func() { closeLater(gone) }()
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, b := range c.built {
		if strings.HasPrefix(key, owner+"|") {
			gone = append(gone, b.backend, b.lastGood)
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
	b, _ := c.Bound(ctx, cl, owner, sink)
	return b
}

// Bound is Backend with the backend's id: the same id as long as the same
// backend is returned, a new one whenever it is rebuilt. A binding keeps
// its actor while its id stands (backends are told apart by id, never
// compared: a backend holding a func or a map by value would panic at ==).
func (c *Cache) Bound(ctx context.Context, cl client.Reader, owner string, sink client.Object) (sinks.Backend, string) {
	t, err := c.Registry.Type(sink)
	if err != nil {
		return c.failing(owner, err.Error())
	}
	// Through the memo: an edit of a sink many inventories share reads
	// its Secrets once, not once per inventory.
	creds, err := c.Registry.credentials(ctx, c.Registry.secrets.reader(cl), sink)
	if err != nil && ctx.Err() != nil {
		// The caller's context ended, not the sink's credentials: nothing
		// is kept, so the backend built before stands.
		return failing{err: err}, ""
	}
	if err != nil {
		return c.failing(owner, err.Error())
	}
	fp := fingerprint(sink, creds)
	if b, id := c.lookup(owner, fp); b != nil {
		return b, id
	}
	dir := ""
	if c.StateDir != "" {
		sum := sha256.Sum256([]byte(owner + "|" + sink.GetNamespace() + "/" + sink.GetName()))
		dir = filepath.Join(c.StateDir, hex.EncodeToString(sum[:8]))
	}
	env := c.Registry.env(creds)
	env.StateDir, env.SharedDir, env.Clients = dir, c.StateDir, c.Registry.Clients
	b, err := t.Build(ctx, sink, creds, env)
	if err != nil && ctx.Err() != nil {
		return failing{err: err}, ""
	}
	if err != nil {
		return c.failing(owner, err.Error())
	}
	return c.store(owner, fp, c.Registry.claimed(b, sink), dir)
}

// failing returns a backend whose exports fail permanently with msg, kept
// stable per owner so the binding's actor is not restarted needlessly.
func (c *Cache) failing(owner, msg string) (sinks.Backend, string) {
	fp := "failing/" + msg
	if b, id := c.lookup(owner, fp); b != nil {
		return b, id
	}
	return c.store(owner, fp, failing{err: sinks.Permanent(errors.New(msg))}, "")
}

type failing struct{ err error }

func (f failing) Export(context.Context, *rows.Delta) (sinks.Ack, error) { return sinks.Ack{}, f.err }

func closeBackend(b sinks.Backend) {
	if c, ok := b.(sinks.Closer); ok {
		c.Close()
	}
}

// closeLater closes backends outside the cache's lock and off the
// caller's path: closing a connection pool waits for the connections an
// export still uses (a long COPY), which must stall neither this
// reconcile nor another inventory's. A pool shared with other sinks'
// backends closes with the last of them (sinks.Clients).
func closeLater(bs []sinks.Backend) {
	var cs []sinks.Closer
	for _, b := range bs {
		if c, ok := b.(sinks.Closer); ok {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return
	}
	go func() {
		for _, c := range cs {
			c.Close()
		}
	}()
}
