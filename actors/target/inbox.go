package target

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kollect.dev/kollect/actors"
	"kollect.dev/kollect/informers"
)

// Inbox receives informer events for one Target actor. Events for the same
// object replace each other until the actor drains them; a single wake-up
// message is in the mailbox at most.
type Inbox struct {
	mu      sync.Mutex
	pending map[pendingKey]pending
	// gvrs are the resources events came for, in the order first seen:
	// a pending key holds its resource's place (a GVR is three strings to
	// hash and 48 bytes in every slot of a burst's map). Entries are only
	// ever appended.
	gvrs    []schema.GroupVersionResource
	nsDirty map[string]bool
	// relist: an informer was rebuilt; the actor lists its stores again.
	relist bool
	// spare is a handed-over slice of a burst, returned empty for the next
	// one (a fresh map of maxBatch entries per slice cost more than the
	// slice's evaluation); kept only while a burst lasts.
	spare   map[pendingKey]pending
	woken   bool
	root    *actor.RootContext
	pid     *actor.PID
	metrics *actors.Metrics

	// kept across restarts of the actor
	cfg    *Config
	subs   map[string]subscription
	frozen bool
}

// remember records the configuration and subscribers, so that a restarted
// actor resumes where it was.
func (b *Inbox) remember(cfg *Config, subs map[string]subscription, frozen bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cfg, b.subs, b.frozen = cfg, subs, frozen
}

func (b *Inbox) recall() (*Config, map[string]subscription, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	subs := make(map[string]subscription, len(b.subs))
	for k, v := range b.subs {
		subs[k] = v
	}
	return b.cfg, subs, b.frozen
}

type wake struct{}

// pendingKey identifies an object: its resource's place in Inbox.gvrs and
// the informer's key (a struct key costs no allocation).
type pendingKey struct {
	gvr int
	key string
}

// pending is an object's latest event: its object, or that it is gone.
type pending struct {
	obj  *unstructured.Unstructured
	gone bool
}

// drained is what the actor takes from the inbox at a wake-up.
type drained struct {
	events map[pendingKey]pending
	gvrs   []schema.GroupVersionResource // what the events' keys index
	// namespaces whose labels changed; relist: the stores must be listed
	// again (then the events are in them already).
	namespaces map[string]bool
	relist     bool
	// more: events were left behind for the next wake-up (a burst).
	more bool
}

// NewInbox builds an inbox; Bind connects it to its actor. metrics (may
// be nil) gets the events waiting in it as the dispatch queue depth.
func NewInbox(root *actor.RootContext, metrics *actors.Metrics) *Inbox {
	return &Inbox{root: root, metrics: metrics, pending: map[pendingKey]pending{}, nsDirty: map[string]bool{}}
}

// Bind sets the actor the inbox wakes, and wakes it when events arrived
// before it started.
func (b *Inbox) Bind(pid *actor.PID) {
	b.mu.Lock()
	b.pid = pid
	if len(b.pending) > 0 || len(b.nsDirty) > 0 || b.relist {
		b.wakeLocked()
		return
	}
	b.mu.Unlock()
}

// Notify implements informers.Subscriber.
func (b *Inbox) Notify(ev informers.Event) {
	b.mu.Lock()
	if ev.Resync {
		b.relist = true
	} else {
		n := len(b.pending)
		b.pending[pendingKey{b.gvrIndex(ev.GVR), ev.Key}] = pending{obj: ev.Object, gone: ev.Deleted || ev.Object == nil}
		if len(b.pending) > n {
			b.metrics.Queued(1)
		}
	}
	b.wakeLocked()
}

// gvrIndex is gvr's place in b.gvrs, added when new; b.mu is held.
func (b *Inbox) gvrIndex(gvr schema.GroupVersionResource) int {
	for i := range b.gvrs {
		if b.gvrs[i] == gvr {
			return i
		}
	}
	b.gvrs = append(b.gvrs, gvr)
	return len(b.gvrs) - 1
}

// NamespaceChanged implements informers.NamespaceSubscriber. A namespace
// the selection rules out by name (a tenant's target closed to its own
// namespace, say) is not re-evaluated: its label changes cannot matter,
// so namespace churn costs a target only the namespaces it may read.
func (b *Inbox) NamespaceChanged(name string) {
	b.mu.Lock()
	if b.cfg != nil && b.cfg.Evaluator != nil && b.cfg.Evaluator.Selection != nil && !b.cfg.Evaluator.Selection.MayMatchNamespace(name) {
		b.mu.Unlock()
		return
	}
	b.nsDirty[name] = true
	b.wakeLocked()
}

func (b *Inbox) wakeLocked() {
	send := !b.woken && b.pid != nil
	b.woken = b.woken || send
	pid := b.pid
	b.mu.Unlock()
	if send {
		b.root.Send(pid, wake{})
	}
}

// maxBatch bounds the events one drain hands over. A burst is evaluated
// and published in slices, so the inventory applies one slice while the
// target evaluates the next: as one batch, a 200,000-object burst kept one
// actor busy for seconds while the other waited.
const maxBatch = 8192

// drain takes the pending events (at most maxBatch, one per object), every
// namespace change, and whether the stores must be listed again. Events
// left behind get the next wake-up, sent here: the inbox stays woken, so
// it is still the only one queued.
func (b *Inbox) drain() drained {
	b.mu.Lock()
	evs := b.pending
	d := drained{gvrs: b.gvrs[:len(b.gvrs):len(b.gvrs)], namespaces: b.nsDirty, relist: b.relist}
	b.nsDirty, b.relist = map[string]bool{}, false
	if len(evs) <= maxBatch {
		b.pending, b.woken, b.spare = map[pendingKey]pending{}, false, nil
		b.metrics.Queued(-len(evs))
		b.mu.Unlock()
		d.events = evs
		return d
	}
	batch := b.spare
	if b.spare = nil; batch == nil {
		batch = make(map[pendingKey]pending, maxBatch)
	}
	for k, ev := range evs {
		batch[k] = ev
		delete(evs, k)
		if len(batch) == maxBatch {
			break
		}
	}
	b.metrics.Queued(-len(batch))
	pid := b.pid
	b.mu.Unlock()
	b.root.Send(pid, wake{})
	d.events, d.more = batch, true
	return d
}

// recycle takes back a batch the actor is done with: a full slice of a
// burst becomes the next slice's map.
func (b *Inbox) recycle(batch map[pendingKey]pending) {
	if len(batch) != maxBatch {
		return
	}
	clear(batch)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) > 0 {
		b.spare = batch
	}
}

// Discard drops the events still waiting: the inbox's target is gone.
func (b *Inbox) Discard() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.metrics.Queued(-len(b.pending))
	b.pending = map[pendingKey]pending{}
}
