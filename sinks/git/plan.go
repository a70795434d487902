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
	"github.com/go-git/go-git/v5/plumbing/object"

	"kollect.dev/kollect/model/rows"
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
		s.prev, s.prevFiles, s.itemBytes = nil, nil, 0
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
	sorted := snap.Ordered()
	var (
		same []int32
		gone []int
	)
	if s.prev != nil && sorted {
		same, gone = pair(s.prev, snap.Rows)
	}
	var (
		pl  *plan
		err error
	)
	if base != plumbing.ZeroHash && base == s.lastCommit && same != nil && !snap.Partial() {
		pl, err = s.planChangedItems(l, snap, edit, same, gone)
	} else {
		pl, err = s.planAllItems(l, snap, edit, same)
	}
	if err != nil {
		return nil, err
	}
	if !sorted {
		apply := pl.apply
		pl.apply = func() { apply(); s.prev, s.prevFiles = nil, nil }
	}
	return pl, nil
}

// planAllItems plans every row. same, when set, pairs the rows with the
// last export's (see pair): an unchanged row's file is not rendered again.
func (s *Sink) planAllItems(l Layout, snap *rows.Snapshot, edit *treeEdit, same []int32) (*plan, error) {
	files, next, items, err := s.renderRows(l, snap.Inventory, snap.Rows, edit, func(j int) (renderedFile, bool) {
		if same == nil || same[j] < 0 {
			return renderedFile{}, false
		}
		return s.prevFiles[same[j]], true
	})
	if err != nil {
		return nil, err
	}
	pl := &plan{files: files, bytes: items}
	if err := s.planIndex(l, snap, pl, edit, func(j int) string { return next[j].path }); err != nil {
		return nil, err
	}
	switch prefix := l.ownedPrefix(snap.Inventory); {
	case snap.Partial():
		// A file names no target: every file the sink owns stays, the
		// kept targets' and the rest alike, until a complete export.
	case s.written != nil:
		for p := range s.written {
			if _, ok := pl.files[p]; !ok {
				pl.remove = append(pl.remove, p)
			}
		}
	case prefix != "" && l.prefixIsOwn(snap.Inventory, prefix):
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
		switch {
		case snap.Partial():
			written[p] = true // kept: still the sink's
		case !written[p]:
			ch.drop = append(ch.drop, p)
		}
	}
	if !s.recorded || len(ch.add) > 0 || len(ch.drop) > 0 {
		pl.owned = ch
	}
	pl.apply = func() {
		s.written, s.prevFiles, s.prev, s.itemBytes = written, next, snap.Rows, items
		if snap.Partial() {
			// The tree holds files the last export's rows do not name:
			// the next export plans every row and removes what is stale.
			s.prevFiles, s.prev = nil, nil
		}
	}
	return pl, nil
}

// planChangedItems plans the rows that left and arrived since the last
// export (a changed row is both: the inventory replaces rows, it never
// edits one), as pair found them.
func (s *Sink) planChangedItems(l Layout, snap *rows.Snapshot, edit *treeEdit, same []int32, gone []int) (*plan, error) {
	var came []*rows.Row
	var cameAt []int
	for j, i := range same {
		if i < 0 {
			came, cameAt = append(came, snap.Rows[j]), append(cameAt, j)
		}
	}
	files, rendered, size, err := s.renderRows(l, snap.Inventory, came, edit, nil)
	if err != nil {
		return nil, err
	}
	next := make([]renderedFile, len(snap.Rows))
	for j, i := range same {
		if i >= 0 {
			next[j] = s.prevFiles[i]
		}
	}
	for k, j := range cameAt {
		next[j] = rendered[k]
	}
	pl := &plan{files: files}
	items := s.itemBytes + size
	left := make(map[string]bool, len(gone))
	for _, i := range gone {
		rf := s.prevFiles[i]
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
	if err := s.planIndex(l, snap, pl, edit, func(j int) string { return next[j].path }); err != nil {
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
		for _, p := range pl.remove {
			delete(s.written, p)
		}
		for _, p := range added {
			s.written[p] = true
		}
		s.prev, s.prevFiles, s.itemBytes = snap.Rows, next, items
	}
	return pl, nil
}

// pair aligns the last export's rows with next (rows.Align): same[j] is the
// index in prev of next[j] when it is the same row (the same pointer: the
// inventory replaces a row that changed), or -1; gone are the indexes in
// prev of the rows next does not hold as they were.
func pair(prev, next []*rows.Row) (same []int32, gone []int) {
	same = make([]int32, len(next))
	rows.Align(prev, next, func(i, j int) {
		switch {
		case j < 0:
			gone = append(gone, i)
		case i < 0:
			same[j] = -1
		case prev[i] == next[j]:
			same[j] = int32(i)
		default: // the same key, another row: it left and arrived
			gone, same[j] = append(gone, i), -1
		}
	})
	return same, gone
}

// renderRows renders rs: path → blob, each row's file in rs's order, and
// their size. known, when set, gives the file of rs[j] when it is the last
// export's (a restarted sink renders every row again, and finds most files
// unchanged on the branch: put stages none of those). Two rows on one
// path are a layout collision.
func (s *Sink) renderRows(l Layout, id rows.Identity, rs []*rows.Row, edit *treeEdit, known func(j int) (renderedFile, bool)) (map[string]plumbing.Hash, []renderedFile, int64, error) {
	files := make(map[string]plumbing.Hash, len(rs))
	out := make([]renderedFile, len(rs))
	var size int64
	for i, r := range rs {
		rf, ok := renderedFile{}, false
		if known != nil {
			rf, ok = known(i)
		}
		if !ok {
			var err error
			if rf, err = s.renderRow(l, id, r, edit); err != nil {
				return nil, nil, 0, err
			}
		}
		if _, dup := files[rf.path]; dup {
			return nil, nil, 0, sinks.Permanent(fmt.Errorf("layout collision: two rows render to %s", rf.path))
		}
		files[rf.path], out[i] = rf.hash, rf
		size += int64(rf.size)
	}
	return files, out, size, nil
}

// renderRow renders a row's file and stages it when the branch lacks it.
func (s *Sink) renderRow(l Layout, id rows.Identity, r *rows.Row, edit *treeEdit) (renderedFile, error) {
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
	return renderedFile{path: p, hash: h, size: int32(len(data))}, nil
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
func (s *Sink) planIndex(l Layout, snap *rows.Snapshot, pl *plan, edit *treeEdit, pathOf func(j int) string) error {
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
		b, err := object.GetBlob(s.stage, old.Hash)
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
