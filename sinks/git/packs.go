package git

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// The mirror stores each pushed export as one pack, the bytes the push
// sent (see stage.send and writePack): two files, where loose objects
// cost one file each, and creating a file costs 0.3-0.7 ms on a virtual
// disk (an export of 1,000 changes wrote ~1,100). go-git searches every pack's
// index per lookup, so packs are merged as they come, geometrically (see
// mergeDue): each pack is at least twice the size of all smaller ones
// together, so a mirror of n exports holds about log2(n) packs and each
// byte is copied about log2(n) times over its life.
//
// A merge copies entries as they are, compressed, without decoding
// them: the packs the sink writes hold no deltas (see writePack), so an
// entry's bytes mean the same at any offset. A pack that
// holds a delta (one a fetch brought) is never merged. The merge leaves
// out entries the mirror no longer needs (see mirror.dead) and copies of
// an object another source already gave.

// packDir is where a mirror keeps its packs.
const packDir = "objects/pack"

// unmergeableError says a merge cannot move a pack's entries: it holds
// deltas, or entries its index does not list.
type unmergeableError struct {
	pack plumbing.Hash
	why  string
}

func (e *unmergeableError) Error() string { return "pack " + e.pack.String() + " " + e.why }

// packFile is one pack of the mirror, with its index.
type packFile struct {
	hash plumbing.Hash
	size int64 // bytes of the .pack file
}

// listPacks lists the mirror's packs that have an index, smallest first.
func listPacks(dir string) ([]packFile, error) {
	des, err := os.ReadDir(filepath.Join(dir, packDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []packFile
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), ".pack")
		if !ok || !strings.HasPrefix(name, "pack-") {
			continue
		}
		h := plumbing.NewHash(strings.TrimPrefix(name, "pack-"))
		if h.IsZero() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, packDir, name+".idx")); err != nil {
			continue // written without its index: go-git never reads it
		}
		fi, err := de.Info()
		if err != nil {
			continue // deleted meanwhile
		}
		out = append(out, packFile{hash: h, size: fi.Size()})
	}
	slices.SortFunc(out, func(a, b packFile) int { return cmp.Compare(a.size, b.size) })
	return out, nil
}

// dropTempPacks removes the files a killed process left half written in
// the pack directory (its packs, merges and indexes are written aside as
// tmp_*, and go-git's fetches write theirs so too). A mirror directory
// has one process.
func dropTempPacks(dir string) error {
	des, err := os.ReadDir(filepath.Join(dir, packDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, de := range des {
		if strings.HasPrefix(de.Name(), "tmp_") {
			if err := os.Remove(filepath.Join(dir, packDir, de.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// mergeDue picks the packs to merge so sizes stay geometric: the smallest
// ones, as long as the next is smaller than twice their sum. It merges
// two packs of one size into one of twice it, like a binary counter's
// carry. ps is smallest first; fewer than two packs is no merge.
func mergeDue(ps []packFile) []packFile {
	if len(ps) < 2 {
		return nil
	}
	sum, n := ps[0].size, 1
	for n < len(ps) && ps[n].size < 2*sum {
		sum += ps[n].size
		n++
	}
	if n < 2 {
		return nil
	}
	return ps[:n]
}

// mergePacks merges the packs of the mirror that are due (see mergeDue),
// leaving out the dead objects. Callers hold the turn.
func (m *mirror) mergePacks() error {
	ps, err := m.mergeable()
	if err != nil {
		return err
	}
	return m.merge(mergeDue(ps), func(h plumbing.Hash) bool { return m.dead[h] })
}

// mergeable lists the packs a merge may take, smallest first.
func (m *mirror) mergeable() ([]packFile, error) {
	ps, err := listPacks(m.dir)
	if err != nil {
		return nil, fmt.Errorf("git mirror: list packs: %w", err)
	}
	return slices.DeleteFunc(ps, func(p packFile) bool { return m.unmergeable[p.hash] }), nil
}

// merge merges srcs into one pack without what drop names, and has go-git
// read the packs again. A source a merge cannot take is left out, of this
// merge and every later one.
func (m *mirror) merge(srcs []packFile, drop func(plumbing.Hash) bool) error {
	for len(srcs) > 0 {
		_, dropped, err := mergePackFiles(m.dir, srcs, drop)
		var never *unmergeableError
		if errors.As(err, &never) {
			m.unmergeable[never.pack] = true
			srcs = slices.DeleteFunc(srcs, func(p packFile) bool { return p.hash == never.pack })
			continue
		}
		m.objs.Reindex()
		if err != nil {
			return fmt.Errorf("git mirror: merge packs: %w", err)
		}
		for _, h := range dropped {
			delete(m.dead, h)
		}
		return nil
	}
	return nil
}

// holding lists the packs a merge may take that hold an object of which
// is true.
func (m *mirror) holding(which func(plumbing.Hash) bool) ([]packFile, error) {
	ps, err := m.mergeable()
	if err != nil {
		return nil, err
	}
	var out []packFile
	for _, p := range ps {
		es, err := entriesOf(m.dir, p)
		if err != nil {
			return nil, fmt.Errorf("git mirror: %w", err)
		}
		if slices.ContainsFunc(es, func(e packEntry) bool { return which(e.hash) }) {
			out = append(out, p)
		}
	}
	return out, nil
}

// forgetDead forgets the dead objects after a fetch: one may have brought
// an object dead here back under a ref. Callers hold the turn.
func (m *mirror) forgetDead() {
	clear(m.dead)
}

// dropDead merges the packs that hold dead objects without them, and
// forgets the dead objects no pack a merge may take holds (loose ones
// were deleted already). Callers hold the turn.
func (m *mirror) dropDead() error {
	if len(m.dead) == 0 {
		return nil
	}
	dead := func(h plumbing.Hash) bool { return m.dead[h] }
	srcs, err := m.holding(dead)
	if err != nil {
		return err
	}
	if err := m.merge(srcs, dead); err != nil {
		return err
	}
	clear(m.dead)
	return nil
}

// repack merges the packs that hold an object seen does not into one
// without those objects (see collectGarbage). Callers hold the turn.
func (m *mirror) repack(seen map[plumbing.Hash]bool) error {
	unseen := func(h plumbing.Hash) bool { return !seen[h] }
	srcs, err := m.holding(unseen)
	if err != nil {
		return fmt.Errorf("git mirror gc: %w", err)
	}
	return m.merge(srcs, unseen)
}
