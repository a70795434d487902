package sink

import (
	"slices"
	"time"

	"kollect.dev/kollect/model/rows"
)

// Debounce decides when a binding exports: a material
// change (new checksum or inventory generation) exports at once; unchanged
// content is re-exported once Interval has passed since the last
// acknowledged export, and never when Interval is 0.
type Debounce struct {
	Interval time.Duration
	Now      func() time.Time
}

// Decide returns whether to export latest now and, when not, how long until
// it is due (0: not due at all).
func (d Debounce) Decide(acked *rows.Snapshot, ackedAt time.Time, latest *rows.Snapshot) (bool, time.Duration) {
	switch {
	case latest == nil:
		return false, 0
	case acked == nil, acked.Checksum != latest.Checksum, acked.Inventory.Generation != latest.Inventory.Generation,
		!slices.Equal(acked.Keep, latest.Keep): // a target listed, or stopped listing
		return true, 0
	case d.Interval <= 0:
		return false, 0
	}
	if elapsed := d.Now().Sub(ackedAt); elapsed < d.Interval {
		return false, d.Interval - elapsed
	}
	return true, 0
}
