package git

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// dir is one directory of the branch's tree as the sink holds it: the
// entries of its tree object in Git's order, read from the mirror the first
// time an export looks inside, and the subdirectories opened since. A
// directory no export has looked into costs its hash only, so the sink
// holds the part of a large tree that changes, not all of it.
type dir struct {
	hash    plumbing.Hash // its tree object; zero while an edit changes it
	read    bool          // entries hold the tree object's entries
	entries []object.TreeEntry
	subs    map[string]*dir // opened subdirectories, by name
}

// open reads the directory's tree object once.
func (d *dir) open(st storer.EncodedObjectStorer) error {
	if d.read {
		return nil
	}
	if d.hash != plumbing.ZeroHash {
		t, err := object.GetTree(st, d.hash)
		if err != nil {
			return fmt.Errorf("git: read tree %s: %w", d.hash, err)
		}
		d.entries = t.Entries
	}
	d.read = true
	return nil
}

// sub opens the subdirectory name, if there is one.
func (d *dir) sub(st storer.EncodedObjectStorer, name string) (*dir, error) {
	if c, ok := d.subs[name]; ok {
		return c, nil
	}
	if err := d.open(st); err != nil {
		return nil, err
	}
	i, ok := find(d.entries, name, true)
	if !ok {
		return nil, nil
	}
	// Opened subdirectories are remembered even in a tree already pushed:
	// what they hold cannot change, only whether it has been read.
	c := &dir{hash: d.entries[i].Hash}
	if d.subs == nil {
		d.subs = map[string]*dir{}
	}
	d.subs[name] = c
	return c, nil
}

// find searches entries, in Git's order, for name as a file or as a
// directory.
func find(entries []object.TreeEntry, name string, isDir bool) (int, bool) {
	return slices.BinarySearchFunc(entries, name, func(e object.TreeEntry, name string) int {
		return gitCompare(e.Name, e.Mode == filemode.Dir, name, isDir)
	})
}

// gitCompare orders tree entry names as Git does: a directory's name as if
// it ended in "/". Names hold no "/", so this is byte order with one extra
// byte for directories.
func gitCompare(a string, aDir bool, b string, bDir bool) int {
	n := min(len(a), len(b))
	if c := strings.Compare(a[:n], b[:n]); c != 0 {
		return c
	}
	tail := func(s string, isDir bool) int {
		switch {
		case len(s) > n:
			return int(s[n])
		case isDir:
			return '/'
		}
		return -1
	}
	ta, tb := tail(a, aDir), tail(b, bDir)
	switch {
	case ta < tb:
		return -1
	case ta > tb:
		return 1
	}
	return 0
}

// errCollision is a layout that puts a file where a directory is, or the
// reverse: the export cannot be written until the layout changes.
var errCollision = errors.New("layout collision")

// treeEdit changes a tree by copying each directory it touches, so the
// tree it started from (the last pushed) stays as it was whatever happens
// to the export, and writing it encodes only the directories it copied.
type treeEdit struct {
	st      storer.EncodedObjectStorer
	root    *dir
	mine    map[*dir]bool          // directories this edit copied or made
	blobs   map[plumbing.Hash]bool // blobs now at a path that held another
	trees   []plumbing.Hash        // tree objects written by write
	changed int                    // files added, changed or removed
	// replaced are the tree objects of the directories this edit copied:
	// what the edited tree no longer holds at their places.
	replaced []plumbing.Hash
}

func newTreeEdit(st storer.EncodedObjectStorer, root *dir) *treeEdit {
	return &treeEdit{st: st, root: root, mine: map[*dir]bool{}, blobs: map[plumbing.Hash]bool{}}
}

// own returns d copied for this edit (d itself when this edit made it).
func (e *treeEdit) own(d *dir) (*dir, error) {
	if e.mine[d] {
		return d, nil
	}
	if err := d.open(e.st); err != nil {
		return nil, err
	}
	c := &dir{read: true, entries: slices.Clone(d.entries), subs: maps.Clone(d.subs)}
	e.mine[c] = true
	if d.hash != plumbing.ZeroHash {
		e.replaced = append(e.replaced, d.hash)
	}
	return c, nil
}

// get returns the file at p, if the tree has one.
func (e *treeEdit) get(p string) (object.TreeEntry, bool, error) {
	d := e.root
	for {
		seg, rest, more := strings.Cut(p, "/")
		if !more {
			if err := d.open(e.st); err != nil {
				return object.TreeEntry{}, false, err
			}
			i, ok := find(d.entries, seg, false)
			if !ok {
				return object.TreeEntry{}, false, nil
			}
			return d.entries[i], true, nil
		}
		c, err := d.sub(e.st, seg)
		if err != nil || c == nil {
			return object.TreeEntry{}, false, err
		}
		d, p = c, rest
	}
}

// set puts blob h at p; a file that already holds h changes nothing.
func (e *treeEdit) set(p string, h plumbing.Hash) error {
	if old, ok, err := e.get(p); err != nil || (ok && old.Hash == h && old.Mode == filemode.Regular) {
		return err
	}
	d, name, err := e.parentOf(p, true)
	if err != nil {
		return err
	}
	if _, isDir := find(d.entries, name, true); isDir {
		return fmt.Errorf("%w: %s is a file and a directory", errCollision, p)
	}
	entry := object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h}
	if i, ok := find(d.entries, name, false); ok {
		d.entries[i] = entry
	} else {
		d.entries = slices.Insert(d.entries, i, entry)
	}
	e.blobs[h] = true
	e.changed++
	return nil
}

// remove deletes the file at p, if there is one; a directory left empty
// goes when the tree is written.
func (e *treeEdit) remove(p string) error {
	if _, ok, err := e.get(p); err != nil || !ok {
		return err
	}
	d, name, err := e.parentOf(p, false)
	if err != nil {
		return err
	}
	i, _ := find(d.entries, name, false)
	d.entries = slices.Delete(d.entries, i, i+1)
	e.changed++
	return nil
}

// parentOf returns p's directory, copied for this edit along with every
// directory above it, making missing ones when create is set.
func (e *treeEdit) parentOf(p string, create bool) (*dir, string, error) {
	root, err := e.own(e.root)
	if err != nil {
		return nil, "", err
	}
	e.root = root
	d := root
	for {
		seg, rest, more := strings.Cut(p, "/")
		if !more {
			return d, seg, nil
		}
		c, err := d.sub(e.st, seg)
		if err != nil {
			return nil, "", err
		}
		if c == nil {
			if !create {
				return nil, "", fmt.Errorf("git: %s has no directory %s", p, seg)
			}
			if _, isFile := find(d.entries, seg, false); isFile {
				return nil, "", fmt.Errorf("%w: %s is a file and a directory", errCollision, seg)
			}
			i, _ := find(d.entries, seg, true)
			d.entries = slices.Insert(d.entries, i, object.TreeEntry{Name: seg, Mode: filemode.Dir})
			c = &dir{read: true}
			e.mine[c] = true
		} else if c, err = e.own(c); err != nil {
			return nil, "", err
		}
		if d.subs == nil {
			d.subs = map[string]*dir{}
		}
		d.subs[seg] = c
		d, p = c, rest
	}
}

// files calls fn for every file in the directory prefix ("" for the
// root), and in its subdirectories when deep is set, reading what it has
// to.
func (e *treeEdit) files(prefix string, deep bool, fn func(p string)) error {
	prefix = strings.Trim(prefix, "/")
	if prefix == "." { // path.Dir of a file at the root
		prefix = ""
	}
	d := e.root
	for _, seg := range strings.Split(prefix, "/") {
		if seg == "" {
			continue
		}
		c, err := d.sub(e.st, seg)
		if err != nil || c == nil {
			return err
		}
		d = c
	}
	var walk func(d *dir, at string) error
	walk = func(d *dir, at string) error {
		if err := d.open(e.st); err != nil {
			return err
		}
		for _, en := range slices.Clone(d.entries) {
			if en.Mode != filemode.Dir {
				fn(at + en.Name)
				continue
			}
			if !deep {
				continue
			}
			c, err := d.sub(e.st, en.Name)
			if err != nil {
				return err
			}
			if err := walk(c, at+en.Name+"/"); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(d, strings.TrimPrefix(prefix+"/", "/"))
}

// write stores the tree objects of every directory this edit changed and
// returns the root's hash; the hashes written are in e.trees.
func (e *treeEdit) write() (plumbing.Hash, error) {
	if e.root.hash == plumbing.ZeroHash && !e.mine[e.root] {
		e.mine[e.root] = true // a first export of nothing: the empty tree
	}
	h, _, err := e.writeDir(e.root, true)
	return h, err
}

func (e *treeEdit) writeDir(d *dir, root bool) (plumbing.Hash, bool, error) {
	if !e.mine[d] {
		return d.hash, false, nil
	}
	for name, c := range d.subs {
		if !e.mine[c] {
			continue
		}
		h, empty, err := e.writeDir(c, false)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		i, _ := find(d.entries, name, true)
		if empty {
			d.entries = slices.Delete(d.entries, i, i+1)
			delete(d.subs, name)
			continue
		}
		d.entries[i].Hash = h
	}
	if len(d.entries) == 0 && !root {
		return plumbing.ZeroHash, true, nil
	}
	obj := e.st.NewEncodedObject()
	if err := (&object.Tree{Entries: d.entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("git: encode tree: %w", err)
	}
	h, err := e.st.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("git: store tree: %w", err)
	}
	d.hash = h
	e.trees = append(e.trees, h)
	return h, false, nil
}
