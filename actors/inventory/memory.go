package inventory

import (
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
