package git

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks"
)

// plan is what one export changes in the branch's tree, and what the sink
// remembers once the remote has it.
type plan struct {
	files  map[string]plumbing.Hash // path → blob to write
	remove []string                 // paths this sink wrote before and no longer does
	bytes  int64                    // the export's size, every file counted
	// owned is how the files the sink owns change, when the remote's
	// record of them must change (perResource only).
	owned *ownedChange
	apply func() // records the export as pushed
}

// planDocuments plans a document layout: one file per part, few files, so
// every export writes them all (an unchanged file changes nothing).
func (s *Sink) planDocuments(l Layout, snap *rows.Snapshot, parts []*rows.Part, edit *treeEdit) (*plan, error) {
	pl := &plan{files: map[string]plumbing.Hash{}}
	s.summary = map[string]string{}
	for _, part := range wholeOr(snap, parts) {
		p, data, err := l.renderPart(part)
		if err != nil {
			return nil, sinks.Permanent(err)
		}
		h, err := s.put(edit, p, data)
		if err != nil {
			return nil, err
		}
		pl.files[p] = h
		pl.bytes += int64(len(data))
		if l.Format == "json" {
			s.summary[p] = part.Checksum // the envelope carries exportedAt
		}
	}
	if s.written != nil {
		for p := range s.written {
			if _, ok := pl.files[p]; !ok {
				pl.remove = append(pl.remove, p)
			}
		}
	} else {
		// Restarted: the documents this layout writes are this sink's, the
		// whole document or its parts, whichever an earlier export wrote.
		doc, err := l.documentFile(snap.Inventory)
		if err != nil {
			return nil, sinks.Permanent(err)
		}
		err = edit.files(path.Dir(doc), false, func(p string) {
			if _, ok := pl.files[p]; !ok && (p == doc || isPartOf(doc, p)) {
				pl.remove = append(pl.remove, p)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	pl.apply = func() {
		s.written = make(map[string]bool, len(pl.files))
		for p := range pl.files {
			s.written[p] = true
		}
		s.prev, s.rendered, s.itemBytes = nil, map[*rows.Row]renderedFile{}, 0
	}
	return pl, nil
}

// planItems plans a file per row. When the branch is where this sink left
// it, the plan holds only the rows that changed since its last export,
// found by walking the two snapshots in their canonical order; otherwise
// (the first export of this process, a branch another writer moved) every
// row is planned, and the tree drops any file it already holds unchanged.
func (s *Sink) planItems(ctx context.Context, l Layout, snap *rows.Snapshot, base plumbing.Hash, edit *treeEdit) (*plan, error) {
	if s.written == nil {
		// Restarted: what this sink owns is recorded in the remote.
		owned, err := s.loadOwned(ctx, snap.Inventory)
		if err != nil {
			return nil, err
		}
		s.written, s.recorded = owned, owned != nil
	}
	s.summary = map[string]string{}
	sorted := slices.IsSortedFunc(snap.Rows, rows.Compare)
	var (
		pl  *plan
		err error
	)
	if base != plumbing.ZeroHash && base == s.lastCommit && s.prev != nil && sorted {
		pl, err = s.planChangedItems(l, snap, edit)
	} else {
		pl, err = s.planAllItems(l, snap, edit)
	}
	if err != nil {
		return nil, err
	}
	if !sorted {
		apply := pl.apply
		pl.apply = func() { apply(); s.prev = nil }
	}
	return pl, nil
}

func (s *Sink) planAllItems(l Layout, snap *rows.Snapshot, edit *treeEdit) (*plan, error) {
	files, rendered, items, err := s.renderRows(l, snap.Inventory, snap.Rows, edit)
	if err != nil {
		return nil, err
	}
	pl := &plan{files: files, bytes: items}
	next := make(map[*rows.Row]renderedFile, len(snap.Rows))
	for i, r := range snap.Rows {
		next[r] = rendered[i]
	}
	if err := s.planIndex(l, snap, pl, edit, func(r *rows.Row) string { return next[r].path }); err != nil {
		return nil, err
	}
	if s.written != nil {
		for p := range s.written {
			if _, ok := pl.files[p]; !ok {
				pl.remove = append(pl.remove, p)
			}
		}
	} else if prefix := l.ownedPrefix(snap.Inventory); prefix != "" && l.prefixIsOwn(snap.Inventory, prefix) {
		// No record in the remote (written by an older version): the
		// files under the item tree's fixed prefix are this inventory's
		// only when that prefix names it, so a shared tree keeps others'.
		err := edit.files(prefix, true, func(p string) {
			if _, ok := pl.files[p]; !ok && strings.HasSuffix(p, l.extension()) {
				pl.remove = append(pl.remove, p)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	written := make(map[string]bool, len(pl.files))
	ch := &ownedChange{all: func() []string { return slices.Collect(maps.Keys(written)) }}
	for p := range pl.files {
		written[p] = true
		if !s.written[p] {
			ch.add = append(ch.add, p)
		}
	}
	for p := range s.written {
		if !written[p] {
			ch.drop = append(ch.drop, p)
		}
	}
	if !s.recorded || len(ch.add) > 0 || len(ch.drop) > 0 {
		pl.owned = ch
	}
	pl.apply = func() {
		s.written, s.rendered, s.prev, s.itemBytes = written, next, snap.Rows, items
	}
	return pl, nil
}

// planChangedItems plans the rows that left and arrived since the last
// export (a changed row is both: the inventory replaces rows, it never
// edits one).
func (s *Sink) planChangedItems(l Layout, snap *rows.Snapshot, edit *treeEdit) (*plan, error) {
	gone, came := diffRows(s.prev, snap.Rows)
	files, rendered, size, err := s.renderRows(l, snap.Inventory, came, edit)
	if err != nil {
		return nil, err
	}
	pl := &plan{files: files}
	items := s.itemBytes + size
	left := make(map[string]bool, len(gone))
	for _, r := range gone {
		rf := s.rendered[r]
		items -= int64(rf.size)
		left[rf.path] = true
		if _, again := pl.files[rf.path]; !again {
			pl.remove = append(pl.remove, rf.path)
		}
	}
	var added []string
	for p := range pl.files {
		switch {
		case !s.written[p]:
			added = append(added, p)
		case !left[p]:
			return nil, sinks.Permanent(fmt.Errorf("layout collision: two rows render to %s", p))
		}
	}
	pl.bytes = items
	pathOf := func(r *rows.Row) string { return s.rendered[r].path }
	if l.Index {
		arrived := make(map[*rows.Row]string, len(came))
		for i, r := range came {
			arrived[r] = rendered[i].path
		}
		pathOf = func(r *rows.Row) string {
			if p, ok := arrived[r]; ok {
				return p
			}
			return s.rendered[r].path
		}
	}
	if err := s.planIndex(l, snap, pl, edit, pathOf); err != nil {
		return nil, err
	}
	if len(added) > 0 || len(pl.remove) > 0 || !s.recorded {
		pl.owned = &ownedChange{add: added, drop: pl.remove, all: func() []string {
			dropped := make(map[string]bool, len(pl.remove))
			for _, p := range pl.remove {
				dropped[p] = true
			}
			list := make([]string, 0, len(s.written)+len(added))
			for p := range s.written {
				if !dropped[p] {
					list = append(list, p)
				}
			}
			return append(list, added...)
		}}
	}
	pl.apply = func() {
		for _, r := range gone {
			delete(s.rendered, r)
		}
		for i, r := range came {
			s.rendered[r] = rendered[i]
		}
		for _, p := range pl.remove {
			delete(s.written, p)
		}
		for _, p := range added {
			s.written[p] = true
		}
		s.prev, s.itemBytes = snap.Rows, items
	}
	return pl, nil
}

// diffRows walks two row lists in canonical order and returns the rows of
// prev that are not in next and those of next that are not in prev (the
// same row is the same pointer).
func diffRows(prev, next []*rows.Row) (gone, came []*rows.Row) {
	i, j := 0, 0
	for i < len(prev) && j < len(next) {
		a, b := prev[i], next[j]
		if a == b {
			i, j = i+1, j+1
			continue
		}
		switch c := rows.Compare(a, b); {
		case c < 0:
			gone, i = append(gone, a), i+1
		case c > 0:
			came, j = append(came, b), j+1
		default:
			gone, came, i, j = append(gone, a), append(came, b), i+1, j+1
		}
	}
	return append(gone, prev[i:]...), append(came, next[j:]...)
}

// renderRows renders rs: path → blob, each row's file in rs's order, and
// their size. Two rows on one path are a layout collision.
func (s *Sink) renderRows(l Layout, id rows.Identity, rs []*rows.Row, edit *treeEdit) (map[string]plumbing.Hash, []renderedFile, int64, error) {
	files := make(map[string]plumbing.Hash, len(rs))
	out := make([]renderedFile, len(rs))
	var size int64
	for i, r := range rs {
		rf, err := s.renderRow(l, id, r, edit)
		if err != nil {
			return nil, nil, 0, err
		}
		if _, dup := files[rf.path]; dup {
			return nil, nil, 0, sinks.Permanent(fmt.Errorf("layout collision: two rows render to %s", rf.path))
		}
		files[rf.path], out[i] = rf.hash, rf
		size += int64(rf.size)
	}
	return files, out, size, nil
}

// renderRow is a row's file, from the last export's when the row is the
// same (a restarted sink renders every row again, and finds most files
// unchanged on the branch: put stages none of those).
func (s *Sink) renderRow(l Layout, id rows.Identity, r *rows.Row, edit *treeEdit) (renderedFile, error) {
	if rf, ok := s.rendered[r]; ok {
		return rf, nil
	}
	p, err := l.itemPath(id, r)
	if err != nil {
		return renderedFile{}, sinks.Permanent(err)
	}
	data, err := l.renderItem(r)
	if err != nil {
		return renderedFile{}, sinks.Permanent(err)
	}
	h, err := s.put(edit, p, data)
	if err != nil {
		return renderedFile{}, err
	}
	return renderedFile{path: p, hash: h, size: len(data)}, nil
}

// put is the blob of data as the file at p: staged only when the tree does
// not already hold that content there.
func (s *Sink) put(edit *treeEdit, p string, data []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(plumbing.BlobObject, data)
	if held, ok, err := edit.get(p); err != nil || (ok && held.Hash == h) {
		return h, err
	}
	return s.blob(data)
}

// planIndex adds the split layout's index, which lists every row's path.
func (s *Sink) planIndex(l Layout, snap *rows.Snapshot, pl *plan, edit *treeEdit, pathOf func(*rows.Row) string) error {
	if !l.Index {
		return nil
	}
	p, data, err := l.renderIndex(snap, pathOf)
	if err != nil {
		return sinks.Permanent(err)
	}
	if _, dup := pl.files[p]; dup {
		return sinks.Permanent(fmt.Errorf("layout collision: the index path %s is also an item path", p))
	}
	h, err := s.put(edit, p, data)
	if err != nil {
		return err
	}
	pl.files[p] = h
	s.summary[p] = snap.Checksum // the index carries exportedAt
	pl.bytes += int64(len(data))
	return nil
}

// keepUnchangedSummaries keeps the branch's version of a summary file
// (a JSON document, a split index) when it already describes this
// snapshot (same checksum): only its export time would change, and a
// restart or a repeated export must not make a commit for that.
func (s *Sink) keepUnchangedSummaries(edit *treeEdit, files map[string]plumbing.Hash) error {
	for p, sum := range s.summary {
		old, ok, err := edit.get(p)
		if err != nil {
			return err
		}
		if !ok || old.Hash == files[p] {
			continue
		}
		b, err := s.repo.BlobObject(old.Hash)
		if err != nil {
			continue
		}
		r, err := b.Reader()
		if err != nil {
			continue
		}
		head := make([]byte, 512) // the checksum comes first in both
		n, _ := io.ReadFull(r, head)
		r.Close()
		if bytes.Contains(head[:n], []byte(sum)) {
			files[p] = old.Hash
		}
	}
	return nil
}

// blob stages a file's content.
func (s *Sink) blob(data []byte) (plumbing.Hash, error) {
	obj := s.stage.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := s.stage.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git: store file: %w", err)
	}
	return h, nil
}
