package objectstore

import (
	"context"
	"fmt"
	"time"

	"gocloud.dev/gcerrors"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// The writer record of an inventory (sinks.Claims) is a small object
// beside its manifest: .kollect/<cluster>/<namespace>/<name>.writer.json.
const writerSuffix = ".writer.json"

type writerRecord struct {
	Writer    string    `json:"writer"`
	UpdatedAt time.Time `json:"updatedAt"`
}

var _ sinks.Claims = (*Store)(nil)

// Writer returns the writer recorded for the inventory under this
// store's prefix and cluster.
func (s *Store) Writer(ctx context.Context, id rows.Identity) (string, error) {
	var rec writerRecord
	if _, err := s.readJSON(ctx, s.metaKey(id, writerSuffix), &rec); err != nil {
		return "", s.redact(err)
	}
	return rec.Writer, nil
}

// SetWriter records (or, for "", removes) the inventory's writer.
func (s *Store) SetWriter(ctx context.Context, id rows.Identity, writer string) error {
	key := s.metaKey(id, writerSuffix)
	if writer == "" {
		if err := s.cfg.Bucket.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return s.redact(fmt.Errorf("delete %s: %w", key, err))
		}
		return nil
	}
	return s.redact(s.writeJSON(ctx, key, writerRecord{Writer: writer, UpdatedAt: s.cfg.Clock.Now().UTC()}))
}
