package git

import (
	"fmt"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// gcEvery is how many pushes (a batch of exports each) a mirror makes
// between two collections of its garbage.
const gcEvery = 200

// collectGarbage deletes the mirror's objects that no reference reaches:
// what failed, rejected or superseded exports wrote. Loose ones are
// deleted; packs holding any are merged without them. The mirror then
// holds what the remote holds, however long the churn. It runs under the
// mirror's turn, after a push (see maybeCollectGarbage): the files and
// trees the sink remembers are then exactly those of the pushed commit,
// which the branch reaches, so none of them is garbage; what another sink
// of the mirror remembers is its last pushed commit and owned record,
// which its branch and owned ref reach.
func (s *Sink) collectGarbage() error {
	shallow, err := s.repo.Storer.Shallow()
	if err != nil {
		return fmt.Errorf("git mirror gc: read the shallow boundary: %w", err)
	}
	seen, err := reachable(s.repo, shallow)
	if err != nil {
		return err
	}
	if err := pruneLoose(s.repo, seen, s.cfg.Clock.Now()); err != nil {
		return err
	}
	return s.m.repack(seen)
}

// reachable marks what the refs of r reach. It stops at the shallow
// boundary of a mirror fetched with a depth (cloneDepth), whose parents
// were never fetched: go-git's own walk failed at the first of them, so
// the garbage of a shallow mirror was never collected.
func reachable(r *gogit.Repository, boundary []plumbing.Hash) (map[plumbing.Hash]bool, error) {
	edge := make(map[plumbing.Hash]bool, len(boundary))
	for _, h := range boundary {
		edge[h] = true
	}
	var todo []plumbing.Hash // a stack: a history of any length walks in a loop
	refs, err := r.Storer.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("git mirror gc: %w", err)
	}
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			todo = append(todo, ref.Hash())
		}
		return nil
	})
	refs.Close()
	seen := map[plumbing.Hash]bool{}
	for len(todo) > 0 {
		h := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[h] {
			continue
		}
		seen[h] = true
		obj, err := object.GetObject(r.Storer, h)
		if err != nil {
			return nil, fmt.Errorf("git mirror gc: read %s: %w", h, err)
		}
		switch o := obj.(type) {
		case *object.Commit:
			todo = append(todo, o.TreeHash)
			if !edge[h] { // a boundary commit's parents were never fetched
				todo = append(todo, o.ParentHashes...)
			}
		case *object.Tree:
			for _, e := range o.Entries {
				switch {
				case e.Mode == filemode.Submodule: // another repository's commit
				case e.Mode.IsFile():
					seen[e.Hash] = true
				default:
					todo = append(todo, e.Hash)
				}
			}
		case *object.Tag:
			todo = append(todo, o.Target)
		}
	}
	return seen, nil
}

// pruneLoose deletes the loose objects of r older than before that seen
// does not hold.
func pruneLoose(r *gogit.Repository, seen map[plumbing.Hash]bool, before time.Time) error {
	los, ok := r.Storer.(storer.LooseObjectStorer)
	if !ok {
		return nil
	}
	err := los.ForEachObjectHash(func(h plumbing.Hash) error {
		if seen[h] {
			return nil
		}
		if t, err := los.LooseObjectTime(h); err != nil || !t.Before(before) {
			return nil // packed, just deleted, or written after the walk began
		}
		return r.DeleteObject(h)
	})
	if err != nil {
		return fmt.Errorf("git mirror gc: %w", err)
	}
	return nil
}

// maybeCollectGarbage counts a push of the mirror and, every
// cfg.GCEvery of them (gcEvery by default, whichever of the mirror's sinks
// made them), makes a collection of garbage due if the mirror may hold
// some its sinks did not delete themselves: it starts that way (a mirror
// directory may outlive a process), and becomes so when an export failed
// with objects already in the mirror, another writer moved the branch, or
// a sink sharing the mirror superseded its owned record. A single
// writer's exports leave none (dropRecord). The collection walks every
// object the refs reach (5-6 s of CPU at 250,000 files), so it waits for
// the exports to pause (see collector): run right after a push, it held
// the last export of a burst of 100,000 creates back by 20 s. Exports
// that never pause run it themselves once another GCEvery pushes passed.
func (s *Sink) maybeCollectGarbage() error {
	every := s.cfg.GCEvery
	if every <= 0 {
		every = gcEvery
	}
	m := s.m
	m.commits++
	switch {
	case m.collect != nil && m.commits-m.dueAt >= every:
		return m.collectNow()
	case m.collect == nil && m.commits%every == 0 && m.dirty:
		m.collect, m.dueAt = s.collectGarbage, m.commits
	}
	m.nudge() // the collector times the pause from here
	return nil
}

// collectNow runs the collection due, if one is. Callers hold the turn.
func (m *mirror) collectNow() error {
	if m.collect == nil {
		return nil
	}
	collect := m.collect
	m.collect = nil
	if err := collect(); err != nil {
		m.dirty = true
		return err
	}
	m.dirty = false
	return nil
}

// record is an owned record's commit and its root tree, the two objects
// of it an edit always replaces.
type record struct{ commit, tree plumbing.Hash }

// emptyTree is the hash of the tree with no entries.
var emptyTree = plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

// dropRecord deletes from the mirror the owned record an export pushed
// over: the last record's commit and root tree, and the trees of its files
// the new one replaced. Those are the garbage a single writer makes (every
// export that adds or removes a file), and the sink knows them: deleting
// them now spares the collection's walk of every object the refs reach.
// A record it cannot account for (written whole over another) leaves the
// mirror to the next collection.
func (s *Sink) dropRecord(owned ownedList) {
	prev := s.ownedHead
	s.ownedHead = record{commit: owned.commit, tree: owned.tree}
	switch {
	case prev.commit == plumbing.ZeroHash || prev.commit == owned.commit:
		return
	case !owned.edited || s.m.shared.Load():
		// Written whole, or in a mirror other sinks use (see mirror):
		// only the collection deletes.
		s.m.dirty = true
		return
	}
	// The empty tree is the record's when it owns nothing, and may be
	// a commit's of the branch too.
	keep := map[plumbing.Hash]bool{emptyTree: true}
	for _, h := range owned.objects {
		keep[h] = true
	}
	for _, h := range append([]plumbing.Hash{prev.commit, prev.tree}, owned.superseded...) {
		if keep[h] {
			continue
		}
		// Loose, it goes now; packed, with the next merge of its pack.
		_ = s.repo.DeleteObject(h)
		s.m.dead[h] = true
	}
}
