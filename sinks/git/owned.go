package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"kollect.dev/kollect/pipeline/model/rows"
)

// A sink records the files it owns in the remote, beside the branch and
// outside its tree: the ref refs/kollect/owned/<cluster>/<namespace>/<name>
// points at a commit whose one file lists them. A restarted operator reads
// it back, so its first export removes exactly the files of rows deleted
// meanwhile and never a file of another inventory or another cluster that
// shares the repository.

const ownedFile = "owned"

var refUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func (l Layout) ownedRef(id rows.Identity) plumbing.ReferenceName {
	part := func(s string) string {
		s = strings.Trim(refUnsafe.ReplaceAllString(s, "-"), ".-")
		if s == "" {
			return "-"
		}
		return s
	}
	return plumbing.ReferenceName("refs/kollect/owned/" + part(l.cluster()) + "/" + part(id.Namespace) + "/" + part(id.Name))
}

// ownedCommit stores the list of owned paths as a commit (deterministic:
// the same list gives the same hash, so an unchanged list pushes nothing)
// and points the local owned ref at it.
func (s *Sink) ownedCommit(id rows.Identity, paths map[string]bool) (plumbing.ReferenceName, error) {
	list := make([]string, 0, len(paths))
	for p := range paths {
		list = append(list, p)
	}
	sort.Strings(list)
	blob, err := s.blob([]byte(strings.Join(list, "\n") + "\n"))
	if err != nil {
		return "", err
	}
	tree := &object.Tree{Entries: []object.TreeEntry{{Name: ownedFile, Mode: filemode.Regular, Hash: blob}}}
	tobj := s.repo.Storer.NewEncodedObject()
	if err := tree.Encode(tobj); err != nil {
		return "", fmt.Errorf("git: encode owned tree: %w", err)
	}
	th, err := s.repo.Storer.SetEncodedObject(tobj)
	if err != nil {
		return "", err
	}
	sig := object.Signature{Name: s.cfg.AuthorName, Email: s.cfg.AuthorEmail, When: time.Unix(0, 0).UTC()}
	c := &object.Commit{Author: sig, Committer: sig, Message: "kollect: files owned by " + id.Namespace + "/" + id.Name + "\n", TreeHash: th}
	cobj := s.repo.Storer.NewEncodedObject()
	if err := c.Encode(cobj); err != nil {
		return "", fmt.Errorf("git: encode owned commit: %w", err)
	}
	ch, err := s.repo.Storer.SetEncodedObject(cobj)
	if err != nil {
		return "", err
	}
	ref := s.cfg.Layout.ownedRef(id)
	if err := s.repo.Storer.SetReference(plumbing.NewHashReference(ref, ch)); err != nil {
		return "", fmt.Errorf("git: update %s: %w", ref, err)
	}
	return ref, nil
}

// loadOwned reads the owned list back from the remote; nil when the
// remote has none (a repository written before the list existed).
func (s *Sink) loadOwned(ctx context.Context, id rows.Identity) (map[string]bool, error) {
	ref := s.cfg.Layout.ownedRef(id)
	spec := config.RefSpec("+" + string(ref) + ":" + string(ref))
	ctx, cancel := s.transfer(ctx)
	defer cancel()
	err := s.repo.FetchContext(ctx, &gogit.FetchOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Auth: s.auth(), ProxyOptions: sshProxy(s.cfg.URL), Force: true})
	switch {
	case err == nil, errors.Is(err, gogit.NoErrAlreadyUpToDate):
	case errors.Is(err, transport.ErrEmptyRemoteRepository), isMissingRef(err):
		return nil, nil
	default:
		return nil, fmt.Errorf("git fetch %s: %w", redact(s.cfg.URL), err)
	}
	r, err := s.repo.Reference(ref, true)
	if err != nil {
		return nil, nil
	}
	c, err := s.repo.CommitObject(r.Hash())
	if err != nil {
		return nil, fmt.Errorf("git: read %s: %w", ref, err)
	}
	f, err := c.File(ownedFile)
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
	owned := map[string]bool{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) > 0 {
			owned[string(line)] = true
		}
	}
	return owned, nil
}
