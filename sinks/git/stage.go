package git

import (
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// stage holds the objects an export writes in memory until the remote has
// them: the push packs them from there, and only then does the mirror
// take them, as one pack: the bytes the push sent (see packs.go). An
// export that fails leaves nothing in the mirror. Reads of objects it
// does not hold go to the mirror.
type stage struct {
	m       *mirror
	objects map[plumbing.Hash]plumbing.EncodedObject
	order   []plumbing.Hash
	bytes   int64
	// pushed is the pack the push sent, written to the mirror's disk as
	// it went, when the stage holds all it wrote (nothing was moved to the
	// mirror early): the mirror keeps it as it is.
	pushed *packInMirror
	early  bool // objects moved to the mirror before the push
}

// Past stageMax bytes a stage moves what it holds to the mirror as a
// pack, so a first export of a large tree does not hold it all.
const stageMax = 64 << 20

var _ storer.EncodedObjectStorer = (*stage)(nil)

func newStage(m *mirror) *stage {
	return &stage{m: m, objects: map[plumbing.Hash]plumbing.EncodedObject{}}
}

func (st *stage) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

func (st *stage) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	h := o.Hash()
	if _, ok := st.objects[h]; ok {
		return h, nil
	}
	st.objects[h] = o
	st.order = append(st.order, h)
	if st.bytes += o.Size(); st.bytes > stageMax {
		st.early = true
		if err := st.flush(); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	return h, nil
}

func (st *stage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, ok := st.objects[h]; ok && (t == plumbing.AnyObject || o.Type() == t) {
		return o, nil
	}
	return st.m.objs.EncodedObject(t, h)
}

func (st *stage) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := st.objects[h]; ok {
		return nil
	}
	return st.m.objs.HasEncodedObject(h)
}

func (st *stage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if o, ok := st.objects[h]; ok {
		return o.Size(), nil
	}
	return st.m.objs.EncodedObjectSize(h)
}

var errStageIter = errors.New("git: a stage lists no objects")

func (st *stage) IterEncodedObjects(plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	return nil, errStageIter
}

func (st *stage) AddAlternate(string) error { return errStageIter }

// flush stores the staged objects in the mirror as one pack, empties the
// stage, and merges the mirror's packs that are due.
func (st *stage) flush() error {
	p := st.pushed
	st.pushed = nil
	if len(st.order) == 0 {
		if p != nil {
			p.drop()
		}
		return nil
	}
	if p == nil {
		// Nothing pushed yet (the stage outgrew stageMax), or nothing
		// pushed through send.
		var err error
		if p, err = newPackInMirror(st.m.dir); err != nil {
			return fmt.Errorf("git mirror: %w", err)
		}
		if p.sum, p.idx, err = writePack(p.bw, st, st.order); err != nil {
			p.drop()
			return fmt.Errorf("git mirror: store a pack: %w", err)
		}
	}
	err := p.keep()
	st.m.objs.Reindex()
	if err != nil {
		return err
	}
	for _, h := range st.order {
		delete(st.m.dead, h) // needed again
	}
	st.objects, st.order, st.bytes = map[plumbing.Hash]plumbing.EncodedObject{}, nil, 0
	return st.m.mergePacks()
}

// drop forgets the pack a push sent, when the export failed.
func (st *stage) drop() {
	if st.pushed != nil {
		st.pushed.drop()
		st.pushed = nil
	}
}

// send writes the pack of objects to w, the push; and to the mirror's
// disk when the stage still holds every object it wrote.
func (st *stage) send(w io.Writer, objects []plumbing.Hash) error {
	st.drop() // a push before this one's
	if st.early {
		_, _, err := writePack(w, st, objects)
		return err
	}
	p, err := newPackInMirror(st.m.dir)
	if err != nil {
		return fmt.Errorf("git mirror: %w", err)
	}
	if p.sum, p.idx, err = writePack(io.MultiWriter(w, p.bw), st, objects); err != nil {
		p.drop()
		return err
	}
	st.pushed = p
	return nil
}
