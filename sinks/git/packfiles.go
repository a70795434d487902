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

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// The files of packs, as a merge reads and writes them (see packs.go):
// a pack is a header, its entries, and a checksum of it all; its index
// lists each entry's object, offset and CRC-32.

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
		p, err := newPackInMirror(dir)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		if p.sum, p.idx, err = writeMerged(dir, p.bw, sources, count); err != nil {
			p.drop()
			return plumbing.ZeroHash, nil, err
		}
		if err := p.keep(); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		sum = p.sum
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

// writeMerged writes a pack of count entries to w: the kept entries of
// sources as they are, read in the order of their packs.
func writeMerged(dir string, w io.Writer, sources []mergeSource, count uint32) (plumbing.Hash, *idxfile.Writer, error) {
	pw, err := newPackWriter(w, count)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	for _, s := range sources {
		if err := copyEntries(dir, pw, s); err != nil {
			return plumbing.ZeroHash, nil, err
		}
	}
	return pw.finish()
}

// copyEntries copies the kept entries of one source to pw, reading its
// pack once from the start: the entries follow its 12-byte header
// without gaps, in the order of their offsets.
func copyEntries(dir string, pw *packWriter, s mergeSource) error {
	f, err := os.Open(packPath(dir, s.p.hash, ".pack"))
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	header := make([]byte, 12)
	if _, err := io.ReadFull(r, header); err != nil || binary.BigEndian.Uint32(header[8:]) != uint32(len(s.entries)) {
		return &unmergeableError{pack: s.p.hash, why: "holds entries its index does not list"}
	}
	var buf []byte
	for i, e := range s.entries {
		n := e.end - e.start
		if n <= 0 {
			return fmt.Errorf("pack %s: entry %s has no bytes", s.p.hash, e.hash)
		}
		if !s.keep[i] {
			if _, err := r.Discard(int(n)); err != nil {
				return fmt.Errorf("pack %s: %w", s.p.hash, err)
			}
			continue
		}
		buf = slices.Grow(buf[:0], int(n))[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("pack %s: %w", s.p.hash, err)
		}
		// An entry's type is in bits 4-6 of its first byte: 6 and 7 are
		// deltas, whose bases are found by offset or by a hash this merge
		// may leave out.
		if t := plumbing.ObjectType(buf[0] >> 4 & 7); t == plumbing.OFSDeltaObject || t == plumbing.REFDeltaObject {
			return &unmergeableError{pack: s.p.hash, why: "holds deltas"}
		}
		start := pw.n
		if _, err := pw.Write(buf); err != nil {
			return err
		}
		pw.idx.Add(e.hash, uint64(start), e.crc)
	}
	return nil
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
