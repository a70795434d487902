package gitlab

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
)

// The writer of an inventory (sinks.Claims) is a field of the owned record
// the sink commits beside the inventory's files, so it moves with them.

var _ sinks.Claims = (*Sink)(nil)

// record reads the inventory's owned record from its branch (in
// merge-request mode, from the target branch while the export branch does
// not exist), the branch and the record's blob id; nil when there is none.
func (s *Sink) record(ctx context.Context, id rows.Identity) (*ownedRecord, string, string, error) {
	h, err := s.host(ctx)
	if err != nil {
		return nil, "", "", err
	}
	br := s.branch(id)
	if _, err := h.branch(ctx, br); errors.Is(err, errNotFound) {
		if !s.cfg.MergeRequest {
			return nil, br, "", nil
		}
		br = s.cfg.TargetBranch
	} else if err != nil {
		return nil, br, "", err
	}
	raw, err := h.rawFile(ctx, br, s.ownedPath(id))
	switch {
	case errors.Is(err, errNotFound):
		return nil, br, "", nil
	case err != nil:
		return nil, br, "", err
	}
	var rec ownedRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, br, "", sinks.Permanent(fmt.Errorf("%s on %s is not a Kollect record (%w): remove it", s.ownedPath(id), br, err))
	}
	return &rec, br, git.BlobID(raw), nil
}

// Writer returns the writer the owned record names, "" for none.
func (s *Sink) Writer(ctx context.Context, id rows.Identity) (string, error) {
	rec, _, _, err := s.record(ctx, id)
	if err != nil || rec == nil {
		return "", err
	}
	return rec.Writer, nil
}

// SetWriter makes the inventory's next records name writer. A record the
// branch already holds is updated at once (a commit of the record alone);
// without one, the next export writes it.
func (s *Sink) SetWriter(ctx context.Context, id rows.Identity, writer string) error {
	s.mu.Lock()
	s.writers[id.Namespace+"/"+id.Name] = writer
	s.mu.Unlock()
	if writer == "" {
		return nil // an empty export removed the record with the files
	}
	rec, br, blob, err := s.record(ctx, id)
	if err != nil || rec == nil || rec.Writer == writer || br != s.branch(id) {
		return err
	}
	rec.Writer = writer
	body, _ := json.Marshal(rec)
	h, err := s.host(ctx)
	if err != nil {
		return err
	}
	_, err = h.commit(ctx, commitRequest{Branch: br, Message: fmt.Sprintf("kollect: %s/%s is written by %s", id.Namespace, id.Name, writer),
		AuthorName: s.cfg.Git.AuthorName, AuthorEmail: s.cfg.Git.AuthorEmail,
		Actions: []action{{Action: "update", FilePath: s.ownedPath(id), Content: base64.StdEncoding.EncodeToString(body), Encoding: "base64", Blob: blob}}})
	return err
}

// writerOf is the writer the inventory's next record names: the one set
// last, else the one the record held.
func (s *Sink) writerOf(id rows.Identity, held string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.writers[id.Namespace+"/"+id.Name]; ok {
		return w
	}
	return held
}
