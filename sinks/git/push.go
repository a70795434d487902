package git

import (
	"context"
	"errors"
	"fmt"
	"io"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"

	"kollect.dev/kollect/sinks"
)

// refUpdate moves one remote ref from the value the export was built on.
type refUpdate struct {
	name plumbing.ReferenceName
	from plumbing.Hash // what the remote must still hold; ignored when force
	to   plumbing.Hash
	// force moves the ref whatever the remote holds.
	force bool
	// record is a writer record, which the mirror does not keep.
	record bool
}

// push sends objects and moves the refs in one receive-pack request.
//
// The objects are the ones the export wrote (the blobs now at a path that
// held another, the directories' trees that changed, the commits), all of
// which the remote lacks as it stood when the export fetched. go-git's own
// push finds them by walking every tree of the old and the new commit,
// which grew with the tree, not with the change. A branch another writer
// moved since the fetch is refused here (or by the remote's own check of
// the old value) as non-fast-forward, and the export is built again on it.
func (s *Sink) push(ctx context.Context, objects []plumbing.Hash, updates []refUpdate) error {
	ctx, cancel := s.transfer(ctx)
	defer cancel()
	err := s.receivePack(ctx, objects, updates)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return sinks.Permanent(fmt.Errorf("git push %s: %w", redact(s.cfg.URL), err))
	}
	return s.explainRefusal(fmt.Errorf("git push %s: %w", redact(s.cfg.URL), err), updates, s.cfg.Clock.Now())
}

func (s *Sink) receivePack(ctx context.Context, objects []plumbing.Hash, updates []refUpdate) (err error) {
	ep, err := transport.NewEndpoint(s.cfg.URL)
	if err != nil {
		return err
	}
	ep.Proxy = sshProxy(s.cfg.URL)
	ep.CaBundle, ep.InsecureSkipTLS = s.cfg.CABundle, s.cfg.InsecureSkipTLS
	c, err := client.NewClient(ep)
	if err != nil {
		return err
	}
	sess, err := c.NewReceivePackSession(ep, s.auth())
	if err != nil {
		return err
	}
	defer func() {
		if cerr := sess.Close(); err == nil {
			err = cerr
		}
	}()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return err
	}
	held, err := adv.AllReferences()
	if err != nil {
		return err
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(adv.Capabilities)
	if adv.Capabilities.Supports(capability.Atomic) {
		_ = req.Capabilities.Set(capability.Atomic) // the branch and the owned list move together
	}
	for _, u := range updates {
		now := plumbing.ZeroHash
		if r, ok := held[u.name]; ok {
			now = r.Hash()
		}
		switch {
		case now == u.to:
			continue
		case !u.force && now != u.from:
			return fmt.Errorf("%s: %w", u.name, gogit.ErrNonFastForwardUpdate)
		}
		req.Commands = append(req.Commands, &packp.Command{Name: u.name, Old: now, New: u.to})
	}
	if len(req.Commands) == 0 {
		return nil
	}
	if len(objects) == 0 { // deletes only: git sends no pack
		status, err := sess.ReceivePack(ctx, req)
		if err == nil && status != nil {
			err = status.Error()
		}
		return err
	}
	pack, w := io.Pipe()
	encoded := make(chan error, 1)
	go func() {
		// Files are small and new: searching them for deltas costs more
		// than it saves, so the pack holds whole objects (see writePack).
		encoded <- w.CloseWithError(s.stage.send(w, objects))
	}()
	req.Packfile = pack
	status, err := sess.ReceivePack(ctx, req)
	if err != nil {
		_ = pack.CloseWithError(err)
		_ = <-encoded
		return err
	}
	if err := <-encoded; err != nil {
		return fmt.Errorf("encode pack: %w", err)
	}
	if status != nil {
		return status.Error()
	}
	return nil
}
