package sinks

import (
	"context"
	"errors"

	"kollect.dev/kollect/pipeline/rows"
)

// Ack is what a backend confirms it holds after an export.
type Ack struct {
	Rows     int    // rows the backend now holds for the inventory
	Bytes    int64  // bytes written
	Changed  bool   // false when the backend already held this content
	Revision string // backend-specific: a commit hash, a version
}

// Snapshot is a backend that stores an inventory's whole current state
// (Git, object stores).
type Snapshot interface {
	// Export makes the backend hold exactly snap, atomically.
	Export(ctx context.Context, snap *rows.Snapshot) (Ack, error)
}

// ErrPermanent marks errors that retrying cannot fix (bad credentials, a
// rejected push, an invalid layout). Wrap with Permanent.
var ErrPermanent = errors.New("permanent")

// Permanent marks err as not worth retrying; its message is unchanged.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

type permanent struct{ error }

func (p permanent) Unwrap() []error { return []error{p.error, ErrPermanent} }
