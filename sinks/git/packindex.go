package git

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// packIndexer stores a pack in the mirror as it is written, and indexes
// it on the way: the push writes its pack to the remote and here at once,
// so the index is built while the remote receives, not after. Each entry
// is inflated once, to hash it and find its end; go-git's pack writer
// parses a pack after the fact, and inflates every entry twice.
//
// The pack is written aside; finish moves it into the mirror, abort
// removes it.
type packIndexer struct {
	w    *io.PipeWriter
	done chan indexedPack
}

type indexedPack struct {
	tmp string
	sum plumbing.Hash
	idx *idxfile.Writer
	err error
}

func newPackIndexer(dir string) *packIndexer {
	r, w := io.Pipe()
	p := &packIndexer{w: w, done: make(chan indexedPack, 1)}
	go func() {
		res := indexPack(dir, r)
		// Read on after a failure, so the writer never blocks: the failure
		// is finish's to report.
		_, _ = io.Copy(io.Discard, r)
		p.done <- res
	}()
	return p
}

func (p *packIndexer) Write(b []byte) (int, error) { return p.w.Write(b) }

// indexPack writes what r holds to a file aside, and indexes it.
func indexPack(dir string, r io.Reader) (res indexedPack) {
	if err := os.MkdirAll(filepath.Join(dir, packDir), 0o755); err != nil {
		return indexedPack{err: err}
	}
	f, err := os.CreateTemp(filepath.Join(dir, packDir), "tmp_pack_")
	if err != nil {
		return indexedPack{err: err}
	}
	res.tmp = f.Name()
	defer func() {
		if cerr := f.Close(); res.err == nil {
			res.err = cerr
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<16)
	tee := io.TeeReader(r, bw)
	sc := packfile.NewScanner(tee)
	_, count, err := sc.Header()
	if err != nil {
		res.err = err
		return res
	}
	res.idx = new(idxfile.Writer)
	if res.err = res.idx.OnHeader(count); res.err != nil {
		return res
	}
	for range count {
		oh, err := sc.NextObjectHeader()
		if err != nil {
			res.err = err
			return res
		}
		if oh.Type == plumbing.OFSDeltaObject || oh.Type == plumbing.REFDeltaObject {
			res.err = errors.New("a delta in a pack the sink wrote") // packed with a window of 0
			return res
		}
		h := plumbing.NewHasher(oh.Type, oh.Length)
		_, crc, err := sc.NextObject(h)
		if err != nil {
			res.err = err
			return res
		}
		res.idx.Add(h.Sum(), uint64(oh.Offset), crc)
	}
	if res.sum, res.err = sc.Checksum(); res.err != nil {
		return res
	}
	if _, res.err = io.Copy(io.Discard, tee); res.err != nil {
		return res
	}
	if res.err = bw.Flush(); res.err != nil {
		return res
	}
	res.err = res.idx.OnFooter(res.sum)
	return res
}

// finish waits for the end of the pack and moves it, with its index, into
// the mirror in dir. Callers then have go-git read the packs again.
func (p *packIndexer) finish(dir string) (plumbing.Hash, error) {
	_ = p.w.Close()
	res := <-p.done
	if res.err == nil {
		res.err = writeIndex(dir, res.sum, res.idx)
	}
	if res.err == nil {
		res.err = os.Rename(res.tmp, packPath(dir, res.sum, ".pack"))
	}
	if res.err != nil {
		if res.tmp != "" {
			_ = os.Remove(res.tmp)
		}
		return plumbing.ZeroHash, fmt.Errorf("git mirror: store a pack: %w", res.err)
	}
	return res.sum, nil
}

// abort drops the pack.
func (p *packIndexer) abort() {
	_ = p.w.CloseWithError(errors.New("git mirror: pack dropped"))
	if res := <-p.done; res.tmp != "" {
		_ = os.Remove(res.tmp)
	}
}
