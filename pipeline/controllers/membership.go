package controllers

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Match is the namespaces a target's selection matched at its last
// reconcile, and the test that matched them, frozen at that selection and
// reading the namespace cache live. A nil Test: the target's verdict does
// not depend on namespaces (it is degraded before it matches any).
type Match struct {
	Names []string
	Test  func(namespace string) bool
}

// recentChanges is how many namespace changes Membership remembers for
// reconciles still running (at 10 changes a second, 100 s of them).
const recentChanges = 1024

// Membership remembers each target's last Match, so that a namespace that
// appears, goes or changes labels requeues only the targets whose matched
// set it changes: under namespace churn a target costs a reconcile when
// its status list moves, not on every namespace event. A nil Membership
// (a reconciler driven without its manager, in tests) records nothing.
type Membership struct {
	mu      sync.Mutex
	members map[types.NamespacedName]member
	// seq counts namespace changes; recent are the last ones, by seq, for
	// a reconcile that read the namespaces before they came.
	seq    uint64
	recent [recentChanges]string
}

type member struct {
	test    func(string) bool
	matched map[string]bool
}

// NewMembership is an empty membership.
func NewMembership() *Membership {
	return &Membership{members: map[types.NamespacedName]member{}}
}

// Seq is the count of namespace changes so far: a reconcile takes it
// before it reads the namespaces, and hands it to Record.
func (m *Membership) Seq() uint64 {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seq
}

// Record keeps key's latest match, read after since (a Seq). It reports
// stale when a namespace change that came meanwhile changes the match, or
// too many came to tell: the reconcile must run again, since that change
// found the previous match and may not have requeued it.
func (m *Membership) Record(key types.NamespacedName, since uint64, match Match) (stale bool) {
	if m == nil {
		return false
	}
	matched := make(map[string]bool, len(match.Names))
	for _, ns := range match.Names {
		matched[ns] = true
	}
	mem := member{test: match.Test, matched: matched}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.members[key] = mem
	if m.seq-since > recentChanges {
		return true
	}
	for s := since; s < m.seq; s++ {
		if mem.concerns(m.recent[s%recentChanges]) {
			return true
		}
	}
	return false
}

// Forget drops a deleted target.
func (m *Membership) Forget(key types.NamespacedName) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.members, key)
}

// Changed records a change to namespace and lists the targets whose
// matched set it changes.
func (m *Membership) Changed(namespace string) []types.NamespacedName {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recent[m.seq%recentChanges] = namespace
	m.seq++
	var out []types.NamespacedName
	for key, mem := range m.members {
		if mem.concerns(namespace) {
			out = append(out, key)
		}
	}
	return out
}

func (mem member) concerns(namespace string) bool {
	return mem.test != nil && mem.test(namespace) != mem.matched[namespace]
}

// NamespaceChanges is an event source that requeues the targets a
// namespace change concerns (see Membership), so the namespaces a target
// matches, and its status lists, follow the cluster as it changes instead
// of on a timer. It reads the same cache the selections read, so a
// reconcile it triggers sees the change.
func NamespaceChanges(w NamespaceWatcher, id string, m *Membership) source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		w.WatchNamespaces("controller:"+id, namespaceFunc(func(name string) {
			for _, key := range m.Changed(name) {
				q.Add(reconcile.Request{NamespacedName: key})
			}
		}))
		return nil
	})
}
