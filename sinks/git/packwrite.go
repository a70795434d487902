package git

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1" //nolint:gosec // Git names objects and packs by SHA-1
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// writePack writes the objects hashes names, read from src, to w as a
// pack of whole objects (no deltas), and returns its checksum and the
// index of where each entry starts.
//
// go-git's pack encoder compresses at zlib's default level, with no
// option (git's own pack.compression): a push of 1,000 changes in a tree
// of 100,000 files carries ~4.5 MB of directory trees, which are mostly
// SHA-1s that do not compress, and deflating them at the default level
// was half of the export (0.56 s; 0.38 s at BestSpeed, for packs about a
// tenth larger). Writing the pack here also yields its index as it goes:
// the mirror keeps the same bytes without reading them back.
func writePack(w io.Writer, src storer.EncodedObjectStorer, hashes []plumbing.Hash) (plumbing.Hash, *idxfile.Writer, error) {
	hashes = slices.Clone(hashes)
	slices.SortFunc(hashes, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
	// A pack holds an object once; sinks of one mirror may each write one
	// (an empty tree, a file two clusters hold alike).
	hashes = slices.Compact(hashes)

	pw, err := newPackWriter(w, uint32(len(hashes)))
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	zw, err := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	for _, h := range hashes {
		start := pw.n
		pw.crc.Reset()
		if err := writeEntry(pw, zw, src, h); err != nil {
			return plumbing.ZeroHash, nil, fmt.Errorf("pack %s: %w", h, err)
		}
		pw.idx.Add(h, uint64(start), pw.crc.Sum32())
	}
	return pw.finish()
}

// writeEntry writes one object's entry: its type and size, then its
// content deflated.
func writeEntry(out io.Writer, zw *zlib.Writer, src storer.EncodedObjectStorer, h plumbing.Hash) error {
	o, err := src.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return err
	}
	// Type in bits 4-6 of the first byte with the size's low 4 bits, then
	// the size's next 7 bits per byte while the top bit is set.
	size := o.Size()
	head := []byte{byte(o.Type())<<4 | byte(size&0x0f)}
	for size >>= 4; size > 0; size >>= 7 {
		head[len(head)-1] |= 0x80
		head = append(head, byte(size&0x7f))
	}
	if _, err := out.Write(head); err != nil {
		return err
	}
	r, err := o.Reader()
	if err != nil {
		return err
	}
	zw.Reset(out)
	_, err = io.Copy(zw, r)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	return err
}

// packWriter writes a pack: a header, the entries written to it, and the
// checksum of it all. It counts what was written and sums the CRC-32 of
// the entry being written; idx is the pack's index, which its callers
// fill as they write entries.
type packWriter struct {
	w   io.Writer
	buf *bufio.Writer // onto w and sum
	sum hash.Hash
	crc hash.Hash32
	n   int64
	idx *idxfile.Writer
}

func newPackWriter(w io.Writer, count uint32) (*packWriter, error) {
	sum := sha1.New() //nolint:gosec // Git's pack checksum
	p := &packWriter{w: w, buf: bufio.NewWriterSize(io.MultiWriter(w, sum), 1<<16), sum: sum, crc: crc32.NewIEEE(), idx: new(idxfile.Writer)}
	header := make([]byte, 12)
	copy(header, "PACK")
	binary.BigEndian.PutUint32(header[4:], 2)
	binary.BigEndian.PutUint32(header[8:], count)
	if _, err := p.Write(header); err != nil {
		return nil, err
	}
	return p, p.idx.OnHeader(count)
}

func (p *packWriter) Write(b []byte) (int, error) {
	n, err := p.buf.Write(b)
	p.crc.Write(b[:n])
	p.n += int64(n)
	return n, err
}

// finish writes the checksum and returns it, with the index.
func (p *packWriter) finish() (plumbing.Hash, *idxfile.Writer, error) {
	if err := p.buf.Flush(); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	var h plumbing.Hash
	copy(h[:], p.sum.Sum(nil))
	if _, err := p.w.Write(h[:]); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	return h, p.idx, p.idx.OnFooter(h)
}

// packInMirror is a pack being written to the mirror's pack directory,
// aside until keep moves it in with its index.
type packInMirror struct {
	dir string
	f   *os.File
	bw  *bufio.Writer
	sum plumbing.Hash
	idx *idxfile.Writer
}

func newPackInMirror(dir string) (*packInMirror, error) {
	if err := os.MkdirAll(filepath.Join(dir, packDir), 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Join(dir, packDir), "tmp_pack_")
	if err != nil {
		return nil, err
	}
	return &packInMirror{dir: dir, f: f, bw: bufio.NewWriterSize(f, 1<<16)}, nil
}

// keep moves the pack and its index into the mirror: the index first,
// since go-git lists packs by their .pack file.
func (p *packInMirror) keep() error {
	err := p.bw.Flush()
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = writeIndex(p.dir, p.sum, p.idx)
	}
	if err == nil {
		err = os.Rename(p.f.Name(), packPath(p.dir, p.sum, ".pack"))
	}
	if err != nil {
		_ = os.Remove(p.f.Name())
		return fmt.Errorf("git mirror: store a pack: %w", err)
	}
	return nil
}

// drop removes the pack.
func (p *packInMirror) drop() {
	_ = p.f.Close()
	_ = os.Remove(p.f.Name())
}
