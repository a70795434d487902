package git

import (
	"bufio"
	"crypto/sha1" //nolint:gosec // Git names objects and packs by SHA-1
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// The mirror stores each pushed export as one pack, the bytes the push
// sent (see stage.flush): two files, where loose objects cost one file
// each, and creating a file costs 0.3-0.7 ms on a virtual disk (an
// export of 1,000 changes wrote ~1,100). go-git searches every pack's
// index per lookup, so packs are merged as they come, geometrically (see
// mergeDue): each pack is at least twice the size of all smaller ones
// together, so a mirror of n exports holds about log2(n) packs and each
// byte is copied about log2(n) times over its life.
//
// A merge copies entries as they are, compressed, without decoding
// them: the packs the sink writes hold no deltas (it packs with a window
// of 0), so an entry's bytes mean the same at any offset. A pack that
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
	slices.SortFunc(out, func(a, b packFile) int { return int(a.size - b.size) })
	return out, nil
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

// packEntry is one object's entry in a pack: where it starts and ends.
type packEntry struct {
	hash       plumbing.Hash
	crc        uint32
	start, end int64
}

// entriesOf reads a pack's index: its entries in the order of the pack.
func entriesOf(dir string, p packFile) ([]packEntry, error) {
	f, err := os.Open(filepath.Join(dir, packDir, "pack-"+p.hash.String()+".idx"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReader(f)).Decode(idx); err != nil {
		return nil, fmt.Errorf("read the index of pack %s: %w", p.hash, err)
	}
	it, err := idx.EntriesByOffset()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []packEntry
	for {
		e, err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		out = append(out, packEntry{hash: e.Hash, crc: e.CRC32, start: int64(e.Offset)})
	}
	// An entry ends where the next begins; the last, at the checksum.
	for i := range out {
		out[i].end = p.size - sha1.Size
		if i+1 < len(out) {
			out[i].end = out[i+1].start
		}
	}
	return out, nil
}

// mergePackFiles writes the entries of srcs into one pack, without those
// drop names and without a second copy of an object, and deletes srcs.
// It returns the new pack's hash (zero when no entry was left) and the
// objects it dropped. It fails with an unmergeableError, having changed
// nothing, if a source holds a delta or an entry its index does not list
// (a second copy of an object, which git's index leaves out).
//
// The new pack and its index are written aside and renamed, the index
// first (go-git lists packs by their .pack file), and only then are the
// sources deleted: a process killed at any point leaves every object in
// some pack go-git reads.
func mergePackFiles(dir string, srcs []packFile, drop func(plumbing.Hash) bool) (plumbing.Hash, []plumbing.Hash, error) {
	var (
		sources []mergeSource
		count   uint32
		seen    = map[plumbing.Hash]bool{}
		dropped []plumbing.Hash
	)
	for _, p := range srcs {
		es, err := entriesOf(dir, p)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		keep := make([]bool, len(es))
		for i, e := range es {
			if seen[e.hash] {
				continue
			}
			if drop != nil && drop(e.hash) {
				dropped = append(dropped, e.hash)
				continue
			}
			seen[e.hash], keep[i] = true, true
			count++
		}
		sources = append(sources, mergeSource{p: p, entries: es, keep: keep})
	}
	var sum plumbing.Hash
	if count > 0 {
		tmp, err := os.CreateTemp(filepath.Join(dir, packDir), "tmp_merge_")
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		defer os.Remove(tmp.Name()) // renamed away when all went well
		idx := new(idxfile.Writer)
		if sum, err = writeMerged(dir, tmp, sources, count, idx); err != nil {
			_ = tmp.Close()
			return plumbing.ZeroHash, nil, err
		}
		if err := tmp.Close(); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		if err := writeIndex(dir, sum, idx); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		if err := os.Rename(tmp.Name(), packPath(dir, sum, ".pack")); err != nil {
			return plumbing.ZeroHash, nil, err
		}
	}
	for _, s := range sources {
		if s.p.hash == sum {
			continue // the same objects again: the same pack
		}
		if err := os.Remove(packPath(dir, s.p.hash, ".pack")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return sum, nil, err
		}
		if err := os.Remove(packPath(dir, s.p.hash, ".idx")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return sum, nil, err
		}
	}
	return sum, dropped, nil
}

// mergeSource is a pack being merged: its entries, and which to copy.
type mergeSource struct {
	p       packFile
	entries []packEntry
	keep    []bool
}

func packPath(dir string, h plumbing.Hash, ext string) string {
	return filepath.Join(dir, packDir, "pack-"+h.String()+ext)
}

// writeMerged writes a pack of count entries to w: a header, the kept
// entries of sources as they are, and the checksum of it all. idx learns
// where each entry now starts.
func writeMerged(dir string, w io.Writer, sources []mergeSource, count uint32, idx *idxfile.Writer) (plumbing.Hash, error) {
	sum := sha1.New() //nolint:gosec // Git's pack checksum
	out := bufio.NewWriterSize(io.MultiWriter(w, sum), 1<<16)
	header := make([]byte, 12)
	copy(header, "PACK")
	binary.BigEndian.PutUint32(header[4:], 2)
	binary.BigEndian.PutUint32(header[8:], count)
	if _, err := out.Write(header); err != nil {
		return plumbing.ZeroHash, err
	}
	header = make([]byte, 12) // each source's, read below
	if err := idx.OnHeader(count); err != nil {
		return plumbing.ZeroHash, err
	}
	pos := int64(len(header))
	var buf []byte
	for _, s := range sources {
		f, err := os.Open(packPath(dir, s.p.hash, ".pack"))
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if _, err := f.ReadAt(header, 0); err != nil || binary.BigEndian.Uint32(header[8:]) != uint32(len(s.entries)) {
			_ = f.Close()
			return plumbing.ZeroHash, &unmergeableError{pack: s.p.hash, why: "holds entries its index does not list"}
		}
		for i, e := range s.entries {
			if !s.keep[i] {
				continue
			}
			n := e.end - e.start
			if n <= 0 {
				_ = f.Close()
				return plumbing.ZeroHash, fmt.Errorf("pack %s: entry %s has no bytes", s.p.hash, e.hash)
			}
			buf = slices.Grow(buf[:0], int(n))[:n]
			if _, err := f.ReadAt(buf, e.start); err != nil {
				_ = f.Close()
				return plumbing.ZeroHash, fmt.Errorf("pack %s: %w", s.p.hash, err)
			}
			// An entry's type is in bits 4-6 of its first byte: 6 and 7
			// are deltas, whose bases are found by offset or by a hash
			// this merge may leave out.
			if t := plumbing.ObjectType(buf[0] >> 4 & 7); t == plumbing.OFSDeltaObject || t == plumbing.REFDeltaObject {
				_ = f.Close()
				return plumbing.ZeroHash, &unmergeableError{pack: s.p.hash, why: "holds deltas"}
			}
			if _, err := out.Write(buf); err != nil {
				_ = f.Close()
				return plumbing.ZeroHash, err
			}
			idx.Add(e.hash, uint64(pos), e.crc)
			pos += n
		}
		if err := f.Close(); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if err := out.Flush(); err != nil {
		return plumbing.ZeroHash, err
	}
	var h plumbing.Hash
	copy(h[:], sum.Sum(nil))
	if _, err := w.Write(h[:]); err != nil {
		return plumbing.ZeroHash, err
	}
	return h, idx.OnFooter(h)
}

// writeIndex writes the index of pack h aside and renames it in place.
func writeIndex(dir string, h plumbing.Hash, w *idxfile.Writer) error {
	idx, err := w.Index()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Join(dir, packDir), "tmp_idx_")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriter(tmp)
	if _, err := idxfile.NewEncoder(bw).Encode(idx); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write the index of pack %s: %w", h, err)
	}
	if err := bw.Flush(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), packPath(dir, h, ".idx"))
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
// read the packs again. A source found to hold deltas is left out of
// every later merge.
func (m *mirror) merge(srcs []packFile, drop func(plumbing.Hash) bool) error {
	if len(srcs) == 0 {
		return nil
	}
	_, dropped, err := mergePackFiles(m.dir, srcs, drop)
	var never *unmergeableError
	if errors.As(err, &never) {
		m.unmergeable[never.pack] = true
		return nil // merged without it next time
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
	ps, err := m.mergeable()
	if err != nil {
		return err
	}
	var srcs []packFile
	for _, p := range ps {
		es, err := entriesOf(m.dir, p)
		if err != nil {
			return fmt.Errorf("git mirror: %w", err)
		}
		if slices.ContainsFunc(es, func(e packEntry) bool { return m.dead[e.hash] }) {
			srcs = append(srcs, p)
		}
	}
	if err := m.merge(srcs, func(h plumbing.Hash) bool { return m.dead[h] }); err != nil {
		return err
	}
	clear(m.dead)
	return nil
}

// repack merges every pack that holds an object seen does not into one
// without those objects (see collectGarbage). Callers hold the turn.
func (m *mirror) repack(seen map[plumbing.Hash]bool) error {
	ps, err := m.mergeable()
	if err != nil {
		return err
	}
	var srcs []packFile
	for _, p := range ps {
		es, err := entriesOf(m.dir, p)
		if err != nil {
			return fmt.Errorf("git mirror gc: %w", err)
		}
		if slices.ContainsFunc(es, func(e packEntry) bool { return !seen[e.hash] }) {
			srcs = append(srcs, p)
		}
	}
	return m.merge(srcs, func(h plumbing.Hash) bool { return !seen[h] })
}
