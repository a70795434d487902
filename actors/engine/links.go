package engine

import (
	"slices"
	"time"

	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/actors/messages"
)

// links holds the running targets and inventories, indexed so that a
// target that starts or stops reconfigures only the inventories that read
// it, and an inventory's configuration is built from the targets of its
// namespace: with a thousand teams, a target of one team costs that team's
// inventories, not a thousand (it cost a thousand configurations, each
// walking a thousand targets, per target started after a restart).
//
// A namespaced inventory reads the namespaced targets of its namespace and
// every cluster target; a cluster inventory reads the cluster targets it
// names (see InventorySpec).
type links struct {
	targets     map[messages.TargetRef]*targetEntry
	nsTargets   map[string]map[messages.TargetRef]*targetEntry // namespaced, by namespace
	clusterTgts map[messages.TargetRef]*targetEntry

	inventories map[string]*inventoryEntry
	nsInvs      map[string]map[string]*inventoryEntry // namespaced, by namespace
	clusterInvs map[string]*inventoryEntry

	// refused are targets frozen before they ever ran in this process (a
	// profile that does not exist after a restart): their inventories say
	// at once that they wait for them (inventory.Config.Refused).
	refused map[messages.TargetRef]bool
}

func newLinks() links {
	return links{targets: map[messages.TargetRef]*targetEntry{}, nsTargets: map[string]map[messages.TargetRef]*targetEntry{},
		clusterTgts: map[messages.TargetRef]*targetEntry{}, inventories: map[string]*inventoryEntry{},
		nsInvs: map[string]map[string]*inventoryEntry{}, clusterInvs: map[string]*inventoryEntry{}, refused: map[messages.TargetRef]bool{}}
}

func (l *links) addTarget(ref messages.TargetRef, t *targetEntry) {
	delete(l.refused, ref)
	l.targets[ref] = t
	if ref.Kind == ClusterTargetKind {
		l.clusterTgts[ref] = t
		return
	}
	add(l.nsTargets, ref.Namespace, ref, t)
}

func (l *links) dropTarget(ref messages.TargetRef) {
	delete(l.refused, ref)
	delete(l.targets, ref)
	delete(l.clusterTgts, ref)
	drop(l.nsTargets, ref.Namespace, ref)
}

func (l *links) addInventory(key string, ent *inventoryEntry) {
	l.inventories[key] = ent
	if ent.spec.Cluster {
		l.clusterInvs[key] = ent
		return
	}
	add(l.nsInvs, ent.spec.ID.Namespace, key, ent)
}

func (l *links) dropInventory(key string) {
	ent := l.inventories[key]
	if ent == nil {
		return
	}
	delete(l.inventories, key)
	delete(l.clusterInvs, key)
	drop(l.nsInvs, ent.spec.ID.Namespace, key)
}

// dropInventories forgets every inventory (the engine stops them all).
func (l *links) dropInventories() {
	fresh := newLinks()
	l.inventories, l.nsInvs, l.clusterInvs = fresh.inventories, fresh.nsInvs, fresh.clusterInvs
}

// readers are the inventories whose configuration depends on whether ref
// runs: those that read it or expect it.
func (l *links) readers(ref messages.TargetRef) []*inventoryEntry {
	var out []*inventoryEntry
	if ref.Kind == ClusterTargetKind {
		for _, invs := range l.nsInvs {
			for _, ent := range invs {
				out = append(out, ent)
			}
		}
	} else {
		for _, ent := range l.nsInvs[ref.Namespace] {
			out = append(out, ent)
		}
	}
	for _, ent := range l.clusterInvs {
		if slices.Contains(ent.spec.Targets, ref) || slices.Contains(ent.spec.Expect, ref) {
			out = append(out, ent)
		}
	}
	return out
}

// config builds an inventory actor's configuration from its spec and the
// targets running now.
func (l *links) config(ent *inventoryEntry, batch time.Duration, publish bool) *inventory.Config {
	s := ent.spec
	cfg := &inventory.Config{Kind: s.Kind, ID: s.ID, Bindings: s.Bindings, BatchWindow: batch, DedupeByUID: s.DedupeByUID, Shards: s.Cluster, Publish: publish}
	for _, ref := range s.Expect {
		if l.targets[ref] == nil {
			cfg.Missing = append(cfg.Missing, ref)
			if l.refused[ref] {
				cfg.Refused = append(cfg.Refused, ref)
			}
		}
	}
	if s.Cluster {
		cfg.TargetNamespaces = s.TargetNamespaces
		for _, ref := range s.Targets {
			if t := l.targets[ref]; t != nil {
				cfg.Sources = append(cfg.Sources, inventory.Source{Ref: ref, PID: t.pid})
			}
		}
		return cfg
	}
	cfg.TargetNamespaces = map[string]bool{s.ID.Namespace: true}
	for ref, t := range l.nsTargets[s.ID.Namespace] {
		cfg.Sources = append(cfg.Sources, inventory.Source{Ref: ref, PID: t.pid})
	}
	for ref, t := range l.clusterTgts {
		cfg.Sources = append(cfg.Sources, inventory.Source{Ref: ref, PID: t.pid})
	}
	return cfg
}

func add[K comparable, V any](m map[string]map[K]V, ns string, k K, v V) {
	if m[ns] == nil {
		m[ns] = map[K]V{}
	}
	m[ns][k] = v
}

func drop[K comparable, V any](m map[string]map[K]V, ns string, k K) {
	delete(m[ns], k)
	if len(m[ns]) == 0 {
		delete(m, ns)
	}
}
