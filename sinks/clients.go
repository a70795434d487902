package sinks

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// Clients shares one client (a connection pool, a broker client) among the
// backends that reach the same server with the same credentials and
// settings, so a thousand inventories bound to one PostgreSQL server hold
// one pool, not a thousand. A backend acquires its client when it is
// built and releases it when it is closed; the last release closes the
// client. Every backend that uses one Clients must dial through the same
// endpoint policy: the policy is not part of the key.
type Clients struct {
	mu sync.Mutex
	m  map[string]*shared
	// closing are the clients whose last release is closing them: a new
	// Acquire of one waits for that to end, so a client that owns state
	// (a Git mirror's directory) is never opened while it is torn down.
	closing map[string]chan struct{}
	// opening are the clients being opened: open runs outside mu (a
	// client may dial its server, and one server that does not answer
	// must not hold every other sink's client), and a second Acquire of
	// the same client waits for the first.
	opening map[string]chan struct{}
}

type shared struct {
	v     any
	close func()
	refs  int
}

// Acquire returns the client of kind for key (everything that makes two
// clients differ: address, credentials, TLS, options), opening it with
// open when none is held. release gives it back; call it once. A nil
// Clients opens a client of the caller's own.
func (c *Clients) Acquire(kind, key string, open func() (any, func(), error)) (v any, release func(), err error) {
	if c == nil {
		v, closeFn, err := open()
		if err != nil {
			return nil, nil, err
		}
		return v, onlyOnce(closeFn), nil
	}
	sum := sha256.Sum256([]byte(kind + "\x00" + key)) // the key holds credentials: kept hashed
	id := hex.EncodeToString(sum[:])
	c.mu.Lock()
	for {
		busy := c.closing[id]
		if busy == nil {
			busy = c.opening[id]
		}
		if busy == nil {
			break
		}
		c.mu.Unlock()
		<-busy
		c.mu.Lock()
	}
	s, ok := c.m[id]
	if !ok {
		opened := make(chan struct{})
		if c.opening == nil {
			c.opening = map[string]chan struct{}{}
		}
		c.opening[id] = opened
		c.mu.Unlock()
		v, closeFn, err := open()
		c.mu.Lock()
		delete(c.opening, id)
		close(opened)
		if err != nil {
			c.mu.Unlock()
			return nil, nil, err
		}
		if c.m == nil {
			c.m = map[string]*shared{}
		}
		s = &shared{v: v, close: closeFn}
		c.m[id] = s
	}
	s.refs++
	c.mu.Unlock()
	return s.v, onlyOnce(func() { c.release(id, s) }), nil
}

func (c *Clients) release(id string, s *shared) {
	c.mu.Lock()
	s.refs--
	if s.refs > 0 {
		c.mu.Unlock()
		return
	}
	delete(c.m, id)
	done := make(chan struct{})
	if c.closing == nil {
		c.closing = map[string]chan struct{}{}
	}
	c.closing[id] = done
	c.mu.Unlock()
	s.close() // outside the lock: a pool waits for its connections in use
	c.mu.Lock()
	delete(c.closing, id)
	c.mu.Unlock()
	close(done)
}

// Open counts the clients held, for metrics and tests.
func (c *Clients) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

func onlyOnce(f func()) func() {
	var once sync.Once
	return func() { once.Do(f) }
}
