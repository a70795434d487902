package git

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// objects is the mirror's storage: go-git's, on disk, in front of which
// it keeps the objects of pushed exports that are not on disk yet. A
// loose object costs a file, and creating a file costs 0.3-0.7 ms on a
// virtual disk: written after each push, before the export returned,
// the objects of an export of 1,000 changes took 0.3-0.7 s that the next
// export waited for. They are written behind instead, by the mirror's
// writer, while the binding batches, paces and settles the next export,
// which stores what is left before it starts; every read sees them
// meanwhile.
//
// Pending objects go to disk in the order they were pushed. A process
// killed with objects pending leaves refs the disk cannot follow (a
// pushed commit, or a fetched one that refers to pending trees); a marker
// file exists while any object is pending, and an open that finds it
// drops the mirror's refs, which the next fetch brings back (see
// openMirror).
type objects struct {
	*filesystem.Storage
	dir string
	// loose writes the pending objects: a storage of its own on the same
	// directory, so the writer stores them while an export reads (loose
	// objects are files written aside and renamed, as git does; go-git's
	// storage keeps no state of them without exclusive access).
	loose *filesystem.Storage
	// storing serializes the uses of loose: the writer and an export
	// finishing what is pending both write through it, and go-git resets
	// a list of its own on every write.
	storing sync.Mutex

	// marking orders the marker file's writes and removals: an export
	// adding objects and the writer storing the last ones may not cross.
	marking sync.Mutex
	marked  bool // the marker file exists; under marking

	mu      sync.Mutex
	written sync.Cond // signaled when objects leave pending or return to order
	pending map[plumbing.Hash]plumbing.EncodedObject
	order   []plumbing.Hash // pending and not being written
	kick    chan struct{}
}

// An export starts by storing what the last one left pending (see
// mirror.attempt), so at most one export's objects are pending, and they
// were in memory already, in its stage. Written behind without that
// wait, twice as many exports of a burst of 100,000 creates fit in the
// binding's pacing (which times the exports, not the writer), each
// rewriting the same large directories, and an operator in 250 MiB
// stalled against its limit for 20 s. writeChunk is how many objects the
// writer takes at a time.
const writeChunk = 64

// pendingMarker is the file that exists while objects are pending.
const pendingMarker = "kollect-pending"

var (
	_ storer.EncodedObjectStorer = (*objects)(nil)
	_ storer.LooseObjectStorer   = (*objects)(nil)
	_ storer.PackfileWriter      = (*objects)(nil)
)

func newObjects(st, loose *filesystem.Storage, dir string) *objects {
	o := &objects{Storage: st, loose: loose, dir: dir, pending: map[plumbing.Hash]plumbing.EncodedObject{}, kick: make(chan struct{}, 1)}
	o.written.L = &o.mu
	return o
}

func (o *objects) lookup(h plumbing.Hash) (plumbing.EncodedObject, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	obj, ok := o.pending[h]
	return obj, ok
}

// EncodedObject reads a pending object, or the disk's.
func (o *objects) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if obj, ok := o.lookup(h); ok {
		if t != plumbing.AnyObject && obj.Type() != t {
			return nil, plumbing.ErrObjectNotFound
		}
		return obj, nil
	}
	return o.Storage.EncodedObject(t, h)
}

// HasEncodedObject says whether a pending object or the disk holds h.
func (o *objects) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := o.lookup(h); ok {
		return nil
	}
	return o.Storage.HasEncodedObject(h)
}

// EncodedObjectSize is the size of a pending object, or the disk's.
func (o *objects) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if obj, ok := o.lookup(h); ok {
		return obj.Size(), nil
	}
	return o.Storage.EncodedObjectSize(h)
}

// DeleteLooseObject deletes h, pending or loose on disk (the sink deletes
// the owned records it superseded, and the collection what no ref
// reaches).
func (o *objects) DeleteLooseObject(h plumbing.Hash) error {
	o.mu.Lock()
	if _, ok := o.pending[h]; ok {
		delete(o.pending, h)
		o.written.Broadcast()
	}
	o.mu.Unlock()
	err := o.Storage.DeleteLooseObject(h)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// add adds the objects of a pushed export to the pending ones. Callers
// hold the turn.
func (o *objects) add(objs map[plumbing.Hash]plumbing.EncodedObject, order []plumbing.Hash) error {
	o.marking.Lock()
	if !o.marked {
		if err := os.WriteFile(filepath.Join(o.dir, pendingMarker), nil, 0o644); err != nil {
			o.marking.Unlock()
			return fmt.Errorf("git mirror: %w", err)
		}
		o.marked = true
	}
	o.mu.Lock()
	o.marking.Unlock() // the objects are in before the writer can see none pending
	for _, h := range order {
		if _, ok := o.pending[h]; ok {
			continue
		}
		o.pending[h] = objs[h]
		o.order = append(o.order, h)
	}
	o.mu.Unlock()
	o.nudge()
	return nil
}

// nudge wakes the mirror's writer.
func (o *objects) nudge() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// next takes up to n pending objects to write, oldest first.
func (o *objects) next(n int) []plumbing.EncodedObject {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]plumbing.EncodedObject, 0, min(n, len(o.order)))
	for len(o.order) > 0 && len(out) < n {
		if obj, ok := o.pending[o.order[0]]; ok {
			out = append(out, obj)
		}
		o.order = o.order[1:]
	}
	return out
}

// stored forgets pending objects the disk now holds, and the marker once
// none is left. One deleted while it was being written (a superseded
// owned record) is deleted from the disk again.
func (o *objects) stored(objs []plumbing.EncodedObject) error {
	var dropped []plumbing.Hash
	o.mu.Lock()
	for _, obj := range objs {
		if _, ok := o.pending[obj.Hash()]; ok {
			delete(o.pending, obj.Hash())
		} else {
			dropped = append(dropped, obj.Hash())
		}
	}
	empty := len(o.pending) == 0
	o.written.Broadcast()
	o.mu.Unlock()
	if len(dropped) > 0 {
		o.storing.Lock()
		for _, h := range dropped {
			_ = o.loose.DeleteLooseObject(h)
		}
		o.storing.Unlock()
	}
	if empty {
		return o.unmark()
	}
	return nil
}

// unmark removes the marker file if no object is pending.
func (o *objects) unmark() error {
	o.marking.Lock()
	defer o.marking.Unlock()
	o.mu.Lock()
	empty := len(o.pending) == 0
	if empty {
		o.order = nil
	}
	o.mu.Unlock()
	if !empty || !o.marked {
		return nil
	}
	if err := os.Remove(filepath.Join(o.dir, pendingMarker)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("git mirror: %w", err)
	}
	o.marked = false
	return nil
}

// writeSome writes up to n pending objects to disk, loose, oldest first.
// It reports whether any is left, being written or not.
func (o *objects) writeSome(n int) (bool, error) {
	objs := o.next(n)
	o.storing.Lock()
	for i, obj := range objs {
		if _, err := o.loose.SetEncodedObject(obj); err != nil {
			o.storing.Unlock()
			o.requeue(objs[i:])
			_ = o.stored(objs[:i])
			return true, fmt.Errorf("git mirror: store %s: %w", obj.Hash(), err)
		}
	}
	o.storing.Unlock()
	if err := o.stored(objs); err != nil {
		return true, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending) > 0, nil
}

// requeue puts objects a failed write left back in front.
func (o *objects) requeue(objs []plumbing.EncodedObject) {
	o.mu.Lock()
	defer o.mu.Unlock()
	hs := make([]plumbing.Hash, 0, len(objs)+len(o.order))
	for _, obj := range objs {
		hs = append(hs, obj.Hash())
	}
	o.order = append(hs, o.order...)
	o.written.Broadcast()
}

// writeAll writes every pending object to disk, and waits for those the
// writer is writing.
func (o *objects) writeAll() error {
	for {
		left, err := o.writeSome(1024)
		if err != nil || !left {
			return err
		}
		o.mu.Lock()
		for len(o.order) == 0 && len(o.pending) > 0 {
			o.written.Wait()
		}
		o.mu.Unlock()
	}
}
