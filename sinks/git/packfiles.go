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
