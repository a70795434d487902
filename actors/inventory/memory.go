package inventory

import (
	"context"
	"sync"

	"kollect.dev/kollect/actors/sink"
)

// Memory keeps what an inventory actor needs after a supervised restart:
// its last configuration, so it resumes at once instead of waiting for the
// next reconcile, and its bindings' slots, so the last acknowledged
// snapshots survive. A nil Memory remembers nothing.
type Memory struct {
	mu    sync.Mutex
	cfg   *Config
	slots map[string]*sink.Slot
	// fences are kept while the inventory lives, whatever becomes of its
	// bindings: a binding replaced (its sink edited, its Secret rotated)
	// shares its key's fence with the binding before it.
	fences map[string]*sink.Fence
}

// fence returns the binding key's fence, made on first use (nil without
// a memory: the binding makes one of its own).
func (m *Memory) fence(key string) *sink.Fence {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fences == nil {
		m.fences = map[string]*sink.Fence{}
	}
	f := m.fences[key]
	if f == nil {
		f = sink.NewFence()
		m.fences[key] = f
	}
	return f
}

// Quiesce waits until no export of the inventory is running (or ctx ends):
// an inventory's sinks are cleaned up only once the exports cancelled by
// its stop have returned, so none of their writes lands after the cleanup.
func (m *Memory) Quiesce(ctx context.Context) error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	fences := make([]*sink.Fence, 0, len(m.fences))
	for _, f := range m.fences {
		fences = append(fences, f)
	}
	m.mu.Unlock()
	for _, f := range fences {
		if err := f.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (m *Memory) remember(cfg *Config) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg = cfg
}

func (m *Memory) config() *Config {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cfg
}

// slot returns the binding's slot, made on first use.
func (m *Memory) slot(key string) *sink.Slot {
	if m == nil {
		return &sink.Slot{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.slots == nil {
		m.slots = map[string]*sink.Slot{}
	}
	s := m.slots[key]
	if s == nil {
		s = &sink.Slot{}
		m.slots[key] = s
	}
	return s
}

// forget drops a binding's slot (the binding is gone or replaced).
func (m *Memory) forget(key string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.slots, key)
}
