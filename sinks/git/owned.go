package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"kollect.dev/kollect/model/rows"
)

// A sink records the files it owns in the remote, beside the branch and
// outside its tree: the ref refs/kollect/owned/<cluster>/<namespace>/<name>
// points at a commit whose tree holds, for each path the sink owns, an
// empty file files/<bucket>/<the path, escaped>, where the bucket is the
// low 12 bits of the path's FNV-1a hash in hex. A restarted operator reads it
// back, so its first export removes exactly the files of rows deleted
// meanwhile and never a file of another inventory or another cluster that
// shares the repository. An export that adds or removes files rewrites
// only their buckets (4,096 of them, about 250 paths each at a million
// files), not a list of every path; the buckets do not follow the
// branch's directories, which hold thousands of files each.
//
// Earlier versions kept one file, owned, listing every path; it is still
// read. The tree carries an empty owned file too, so an earlier version
// that reads this record after a downgrade sees a sink that owns nothing:
// it leaves the files of rows deleted meanwhile rather than removing any
// file it cannot prove it wrote.

const (
	ownedFile = "owned" // the list of earlier versions; empty now
	ownedDir  = "files"
)

var refUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func (l Layout) ownedRef(id rows.Identity) plumbing.ReferenceName {
	return plumbing.ReferenceName("refs/kollect/owned/" + refPart(l.cluster()) + "/" + refPart(id.Namespace) + "/" + refPart(id.Name))
}

// refPart is s made safe as one segment of a ref name.
func refPart(s string) string {
	s = strings.Trim(refUnsafe.ReplaceAllString(s, "-"), ".-")
	if s == "" {
		return "-"
	}
	return s
}

// ownedChange is how the files a sink owns change with an export.
type ownedChange struct {
	add, drop []string
	all       func() []string // every path owned after the export
}

// ownedList is the commit that records a sink's owned files, and the
// objects it is made of.
type ownedList struct {
	ref     plumbing.ReferenceName
	commit  plumbing.Hash
	tree    plumbing.Hash   // the commit's root tree
	files   plumbing.Hash   // the files/ tree
	objects []plumbing.Hash // the objects the remote lacks, the commit last
	// edited says the record was edited from the last one, whose trees
	// it replaced are superseded; otherwise it was written whole.
	edited     bool
	superseded []plumbing.Hash
}

// ownedCommit records the owned files after ch as a commit, editing the
// record the remote holds when the sink has read or pushed it, else
// writing it whole. The same files give the same commit, so an unchanged
// record pushes nothing.
func (s *Sink) ownedCommit(id rows.Identity, ch *ownedChange) (ownedList, error) {
	empty, err := s.blob(nil)
	if err != nil {
		return ownedList{}, err
	}
	base, add, drop := &dir{read: true}, ch.all(), []string(nil)
	if s.recorded && s.ownedFiles != plumbing.ZeroHash {
		base, add, drop = &dir{hash: s.ownedFiles}, ch.add, ch.drop
	}
	edit := newTreeEdit(s.stage, base)
	for _, p := range drop {
		if err := edit.remove(ownedEntry(p)); err != nil {
			return ownedList{}, err
		}
	}
	for _, p := range add {
		if err := edit.set(ownedEntry(p), empty); err != nil {
			return ownedList{}, err
		}
	}
	files, err := edit.write()
	if err != nil {
		return ownedList{}, err
	}
	tree := &object.Tree{Entries: []object.TreeEntry{
		{Name: ownedDir, Mode: filemode.Dir, Hash: files},
		{Name: ownedFile, Mode: filemode.Regular, Hash: empty},
	}}
	tobj := s.stage.NewEncodedObject()
	if err := tree.Encode(tobj); err != nil {
		return ownedList{}, fmt.Errorf("git: encode owned tree: %w", err)
	}
	th, err := s.stage.SetEncodedObject(tobj)
	if err != nil {
		return ownedList{}, err
	}
	sig := object.Signature{Name: s.cfg.AuthorName, Email: s.cfg.AuthorEmail, When: time.Unix(0, 0).UTC()}
	c := &object.Commit{Author: sig, Committer: sig, Message: "kollect: files owned by " + id.Namespace + "/" + id.Name + "\n", TreeHash: th}
	cobj := s.stage.NewEncodedObject()
	if err := c.Encode(cobj); err != nil {
		return ownedList{}, fmt.Errorf("git: encode owned commit: %w", err)
	}
	commit, err := s.stage.SetEncodedObject(cobj)
	if err != nil {
		return ownedList{}, err
	}
	objects := append(slices.Clip(edit.trees), empty, th, commit) // never into edit.trees' spare capacity
	return ownedList{ref: s.cfg.Layout.ownedRef(id), commit: commit, tree: th, files: files, objects: objects,
		edited: base.hash != plumbing.ZeroHash, superseded: edit.replaced}, nil
}

// Whether a sink's owned record was fetched by its batch's leader (see
// prefetchOwned): the record read next then needs no fetch of its own.
const (
	prefetchNone    = iota
	prefetchFetched // the local ref is the remote's
	prefetchAbsent  // the remote holds no record
)

// fetchRefs brings refs from the remote into the mirror under the same
// names, in one fetch; an empty remote is no error.
func (s *Sink) fetchRefs(ctx context.Context, refs []plumbing.ReferenceName) error {
	specs := make([]config.RefSpec, 0, len(refs))
	for _, ref := range refs {
		specs = append(specs, config.RefSpec("+"+string(ref)+":"+string(ref)))
	}
	ctx, cancel := s.transfer(ctx)
	defer cancel()
	err := s.repo.FetchContext(ctx, &gogit.FetchOptions{RemoteName: "origin", RefSpecs: specs, Auth: s.auth(), ProxyOptions: sshProxy(s.cfg.URL), Force: true,
		CABundle: s.cfg.CABundle, InsecureSkipTLS: s.cfg.InsecureSkipTLS})
	switch {
	case err == nil:
		s.m.forgetDead()
		return nil
	case errors.Is(err, gogit.NoErrAlreadyUpToDate), errors.Is(err, transport.ErrEmptyRemoteRepository):
		return nil
	case isMissingRef(err):
		return err
	}
	return fmt.Errorf("git fetch %s: %w", redact(s.cfg.URL), err)
}

// ownedEntry is where the record keeps path: in its bucket, escaped to
// one file name.
func ownedEntry(path string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(path))
	return fmt.Sprintf("%03x/%s", h.Sum32()&0xfff, url.PathEscape(path))
}

// ownedPath is the path a record entry stands for.
func ownedPath(entry string) (string, error) {
	_, name, _ := strings.Cut(entry, "/")
	p, err := url.PathUnescape(name)
	if err != nil {
		return "", fmt.Errorf("owned record entry %q: %w", entry, err)
	}
	return p, nil
}

// loadOwned reads the owned list back from the remote; nil when the
// remote has none (a repository written before the list existed).
func (s *Sink) loadOwned(ctx context.Context, id rows.Identity) (map[string]bool, error) {
	ref := s.cfg.Layout.ownedRef(id)
	prefetched := s.ownedPrefetched
	s.ownedPrefetched = prefetchNone
	switch prefetched {
	case prefetchAbsent:
		return nil, nil
	case prefetchNone:
		if err := s.fetchRefs(ctx, []plumbing.ReferenceName{ref}); isMissingRef(err) {
			return nil, nil
		} else if err != nil {
			return nil, err
		}
	}
	r, err := s.repo.Reference(ref, true)
	if err != nil {
		return nil, nil
	}
	c, err := s.repo.CommitObject(r.Hash())
	if err != nil {
		return nil, fmt.Errorf("git: read %s: %w", ref, err)
	}
	s.ownedHead = record{commit: c.Hash, tree: c.TreeHash}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("git: read %s: %w", ref, err)
	}
	owned := map[string]bool{}
	if e, err := tree.FindEntry(ownedDir); err == nil && e.Mode == filemode.Dir {
		var bad error
		err := newTreeEdit(s.repo.Storer, &dir{hash: e.Hash}).files("", true, func(entry string) {
			p, err := ownedPath(entry)
			if err != nil {
				bad = err
			}
			owned[p] = true
		})
		if err = errors.Join(err, bad); err != nil {
			return nil, fmt.Errorf("git: read %s: %w", ref, err)
		}
		s.ownedFiles = e.Hash
		return owned, nil
	}
	// An earlier version's list.
	f, err := tree.File(ownedFile)
	if err != nil {
		return nil, fmt.Errorf("git: read %s: %w", ref, err)
	}
	rd, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) > 0 {
			owned[string(line)] = true
		}
	}
	s.ownedFiles = plumbing.ZeroHash // written whole in the tree format next time
	return owned, nil
}
