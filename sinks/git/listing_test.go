package git

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/utils/clock"
)

// TestOneListingServesEveryReaderOfItsCredentials: a hundred sinks reading
// their writer records at once make one ref listing; a sink with other
// credentials makes its own; once records were pushed, the next read
// lists again.
func TestOneListingServesEveryReaderOfItsCredentials(t *testing.T) {
	m := &mirror{}
	var calls atomic.Int32
	list := func(context.Context) ([]plumbing.ReferenceName, error) {
		calls.Add(1)
		time.Sleep(50 * time.Millisecond) // readers arrive while it is made
		return []plumbing.ReferenceName{"refs/kollect/writer/default/a/inv/w"}, nil
	}
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if refs, err := m.listed(context.Background(), clock.RealClock{}, "team-token", list); err != nil || len(refs) != 1 {
				t.Errorf("listed %v, %v", refs, err)
			}
		}()
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d listings for 100 readers of one credentials, want 1", n)
	}
	if _, err := m.listed(context.Background(), clock.RealClock{}, "other-token", list); err != nil || calls.Load() != 2 {
		t.Fatalf("another credentials' read: %v, %d listings, want 2", err, calls.Load())
	}
	m.forgetListings()
	if _, err := m.listed(context.Background(), clock.RealClock{}, "team-token", list); err != nil || calls.Load() != 3 {
		t.Fatalf("a read after the records changed: %v, %d listings, want 3", err, calls.Load())
	}
}
