// Package eventually is the one way tests wait for something another
// goroutine, actor or server does: poll a check until it passes or the
// timeout ends, then fail with what was awaited and the check's last
// error. Timing itself (debounce, back-off, pacing) is tested on a fake
// clock, not by waiting.
package eventually

import (
	"errors"
	"testing"
	"time"
)

// Check polls check until it returns nil, and fails the test with what
// and its last error if it has not within timeout. It returns how long
// the wait took.
func Check(t testing.TB, timeout time.Duration, what string, check func() error) time.Duration {
	t.Helper()
	start := time.Now()
	poll := 5 * time.Millisecond
	for {
		err := check()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(poll)
		poll = min(2*poll, 100*time.Millisecond)
	}
}

// True is Check for a condition without an error to report.
func True(t testing.TB, timeout time.Duration, what string, ok func() bool) time.Duration {
	t.Helper()
	return Check(t, timeout, what, func() error {
		if ok() {
			return nil
		}
		return errFalse
	})
}

var errFalse = errors.New("still false")
