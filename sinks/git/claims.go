package git

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// The writer record of an inventory (sinks.Claims) is a ref whose last
// segment names the writer:
// refs/kollect/writer/<cluster>/<namespace>/<name>/<writer>. Reading it is
// a listing of the remote's refs, without fetching anything; it points at
// an empty commit, so it costs the repository one tiny object.

var _ sinks.Claims = (*Sink)(nil)

func (l Layout) writerPrefix(id rows.Identity) string {
	return "refs/kollect/writer/" + refPart(l.cluster()) + "/" + refPart(id.Namespace) + "/" + refPart(id.Name) + "/"
}

// Writer returns the writer the remote records for the inventory, "" for
// none.
func (s *Sink) Writer(ctx context.Context, id rows.Identity) (string, error) {
	refs, err := s.writerRefs(ctx, id)
	if err != nil || len(refs) == 0 {
		return "", err
	}
	return strings.TrimPrefix(refs[0].String(), s.cfg.Layout.writerPrefix(id)), nil
}

// writerRefs lists the inventory's writer refs on the remote, from a
// listing at most listingTTL old. A listing needs no objects: it goes
// through a remote of its own, not the mirror, so it does not wait for
// the mirror's turn.
func (s *Sink) writerRefs(ctx context.Context, id rows.Identity) ([]plumbing.ReferenceName, error) {
	listed, err := s.m.listed(ctx, s.cfg.Clock, s.credentialsKey(), s.listRefs)
	if err != nil {
		return nil, err
	}
	return s.cfg.Layout.writersIn(listed, id), nil
}

// writersIn are the writer refs of inventory id among listed.
func (l Layout) writersIn(listed []plumbing.ReferenceName, id rows.Identity) []plumbing.ReferenceName {
	prefix := l.writerPrefix(id)
	var out []plumbing.ReferenceName
	for _, r := range listed {
		if strings.HasPrefix(r.String(), prefix) {
			out = append(out, r)
		}
	}
	return out
}

// listRefs lists the remote's refs with the sink's credentials.
func (s *Sink) listRefs(ctx context.Context) ([]plumbing.ReferenceName, error) {
	s.m.lists.Add(1)
	remote := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{s.cfg.URL}})
	tctx, cancel := s.transfer(ctx)
	defer cancel()
	listed, err := remote.ListContext(tctx, &gogit.ListOptions{Auth: s.auth(), ProxyOptions: sshProxy(s.cfg.URL),
		CABundle: s.cfg.CABundle, InsecureSkipTLS: s.cfg.InsecureSkipTLS})
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return nil, nil
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return nil, sinks.Permanent(fmt.Errorf("git ls-remote %s: %w", redact(s.cfg.URL), err))
	case err != nil:
		return nil, fmt.Errorf("git ls-remote %s: %w", redact(s.cfg.URL), err)
	}
	out := make([]plumbing.ReferenceName, 0, len(listed))
	for _, r := range listed {
		out = append(out, r.Name())
	}
	return out, nil
}

// SetWriter records (or, for "", removes) the inventory's writer, in one
// push that also removes any other writer's ref; the push is batched with
// the other exports queued on the mirror (see batch.go).
func (s *Sink) SetWriter(ctx context.Context, id rows.Identity, writer string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.m.export(ctx, &request{s: s, ctx: ctx, claim: &claim{id: id, writer: writer}, done: make(chan result, 1)})
	return err
}

// claim is a request to record an inventory's writer.
type claim struct {
	id     rows.Identity
	writer string
}

// claimUpdates are the ref updates (and the objects, staged) that record
// c: the writer's ref set, any other writer's removed. listed is the
// remote's refs as the batch listed them, afresh.
func (s *Sink) claimUpdates(c *claim, listed []plumbing.ReferenceName) ([]plumbing.Hash, []refUpdate, error) {
	held := s.cfg.Layout.writersIn(listed, c.id)
	var updates []refUpdate
	var objects []plumbing.Hash
	mine := plumbing.ReferenceName(s.cfg.Layout.writerPrefix(c.id) + refPart(c.writer))
	for _, r := range held {
		if c.writer == "" || r != mine {
			updates = append(updates, refUpdate{name: r, to: plumbing.ZeroHash, force: true, record: true})
		}
	}
	if c.writer != "" {
		commit, err := s.writerCommit(c.writer)
		if err != nil {
			return nil, nil, err
		}
		objects = append(objects, s.emptyTree(), commit)
		updates = append(updates, refUpdate{name: mine, to: commit, force: true, record: true})
	}
	return objects, updates, nil
}

// emptyTree stores the empty tree in the stage and returns its hash.
func (s *Sink) emptyTree() plumbing.Hash {
	obj := s.stage.NewEncodedObject()
	_ = (&object.Tree{}).Encode(obj)
	h, _ := s.stage.SetEncodedObject(obj)
	return h
}

func (s *Sink) writerCommit(writer string) (plumbing.Hash, error) {
	sig := object.Signature{Name: s.cfg.AuthorName, Email: s.cfg.AuthorEmail, When: s.cfg.Clock.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: "kollect writer " + writer + "\n", TreeHash: s.emptyTree()}
	obj := s.stage.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git: encode the writer commit: %w", err)
	}
	return s.stage.SetEncodedObject(obj)
}
