package git

import (
	"context"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/utils/clock"
)

// Reading an inventory's writer record is a listing of the remote's refs,
// and a listing holds every inventory's refs: a thousand inventories on
// one repository, each listing before every export, moved a thousand times
// a thousand refs. The mirror therefore keeps the last listing per
// credentials (a listing made with one sink's credentials is never read
// for another's) for listingTTL, and one listing serves every reader that
// asks while it is made. A writer record another cluster sets is thus
// seen up to listingTTL late; recording a writer lists afresh (once for
// every record of a batch, see refList), and a push of records drops the
// listings.
const listingTTL = 5 * time.Second

// listing is one ref listing of the remote, or one being made.
type listing struct {
	at    time.Time
	refs  []plumbing.ReferenceName
	err   error
	ready chan struct{} // closed once refs or err is set
}

// listed returns the remote's refs as listed at most listingTTL ago with
// the credentials of key, calling list when there is no such listing.
func (m *mirror) listed(ctx context.Context, clk clock.PassiveClock, key string, list func(context.Context) ([]plumbing.ReferenceName, error)) ([]plumbing.ReferenceName, error) {
	m.mu.Lock()
	l := m.listings[key]
	if l == nil || (isClosed(l.ready) && (l.err != nil || clk.Since(l.at) > listingTTL)) {
		l = &listing{ready: make(chan struct{})}
		if m.listings == nil {
			m.listings = map[string]*listing{}
		}
		m.listings[key] = l
		m.mu.Unlock()
		l.refs, l.err = list(ctx)
		l.at = clk.Now()
		close(l.ready)
		return l.refs, l.err
	}
	m.mu.Unlock()
	select {
	case <-l.ready:
		return l.refs, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// forgetListings drops every listing: the remote's refs changed.
func (m *mirror) forgetListings() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.listings = nil
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
