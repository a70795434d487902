package git

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// stage holds the objects an export writes in memory until the remote has
// them: the push packs them from there, and only then does the mirror
// take them: when they are few, to store loose behind the export (see
// objects), and when they are many, as one pack at once (a first export
// of a large tree wrote a million loose files, and read each back to push
// it). An export that fails leaves nothing in the mirror. Reads of
// objects it does not hold go to the mirror.
type stage struct {
	mirror  *objects
	objects map[plumbing.Hash]plumbing.EncodedObject
	order   []plumbing.Hash
	bytes   int64
	// pushed is the pack the push sent, kept when the stage holds all it
	// wrote (nothing was moved to the mirror early): the mirror stores
	// that pack as it is instead of compressing every object again.
	pushed bytes.Buffer
	early  bool // objects moved to the mirror before the push
}

// Past stageMax bytes a stage moves what it holds to the mirror as a
// pack, so a first export of a large tree does not hold it all; from
// packAt objects it stores them as a pack rather than loose. Only first
// exports and mass changes come to that many: go-git keeps the index of
// every pack of the mirror in memory and searches each per lookup, so a
// pack per export would grow both without bound (the garbage collection
// removes loose objects no ref reaches, and never merges packs).
const (
	stageMax = 64 << 20
	packAt   = 4096
)

// packs says whether the stage goes to the mirror as a pack.
func (st *stage) packs() bool {
	return len(st.order) >= packAt
}

var _ storer.EncodedObjectStorer = (*stage)(nil)

func newStage(mirror *objects) *stage {
	return &stage{mirror: mirror, objects: map[plumbing.Hash]plumbing.EncodedObject{}}
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
	return st.mirror.EncodedObject(t, h)
}

func (st *stage) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := st.objects[h]; ok {
		return nil
	}
	return st.mirror.HasEncodedObject(h)
}

func (st *stage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if o, ok := st.objects[h]; ok {
		return o.Size(), nil
	}
	return st.mirror.EncodedObjectSize(h)
}

var errStageIter = errors.New("git: a stage lists no objects")

func (st *stage) IterEncodedObjects(plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	return nil, errStageIter
}

func (st *stage) AddAlternate(string) error { return errStageIter }

// flush stores the staged objects in the mirror and empties the stage.
func (st *stage) flush() error {
	if len(st.order) == 0 {
		return nil
	}
	switch {
	case st.packs():
		w, err := st.mirror.PackfileWriter()
		if err != nil {
			return fmt.Errorf("git mirror: %w", err)
		}
		if st.pushed.Len() > 0 {
			_, err = st.pushed.WriteTo(w)
		} else {
			_, err = packfile.NewEncoder(w, st, false).Encode(st.order, 0)
		}
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("git mirror: store a pack: %w", err)
		}
	case st.early:
		// Not pushed yet: the stage outgrew stageMax during the build.
		for _, h := range st.order {
			if _, err := st.mirror.SetEncodedObject(st.objects[h]); err != nil {
				return fmt.Errorf("git mirror: store %s: %w", h, err)
			}
		}
	default:
		// Pushed: the mirror's writer stores them, after this export.
		if err := st.mirror.add(st.objects, st.order); err != nil {
			return err
		}
	}
	st.objects, st.order, st.bytes = map[plumbing.Hash]plumbing.EncodedObject{}, nil, 0
	st.pushed.Reset()
	return nil
}

// packTo is where the push writes its pack: to w, and kept for the mirror
// when the stage still holds every object it wrote.
func (st *stage) packTo(w io.Writer) io.Writer {
	if st.early || !st.packs() {
		return w
	}
	return io.MultiWriter(w, &st.pushed)
}
