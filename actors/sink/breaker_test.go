package sink

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

func TestBreaker(t *testing.T) {
	type step struct {
		event string // fail, ok, retry
		state Circuit
		delay time.Duration // after a failure, with no jitter taken
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"closed until OpenAfter failures", []step{{"fail", Closed, time.Second}, {"fail", Closed, 2 * time.Second}, {"fail", Open, 4 * time.Second}}},
		{"a success closes and resets", []step{{"fail", Closed, time.Second}, {"ok", Closed, 0}, {"fail", Closed, time.Second}}},
		{"half open after the back-off; one failure opens again", []step{{"fail", Closed, time.Second}, {"fail", Closed, 2 * time.Second},
			{"fail", Open, 4 * time.Second}, {"retry", HalfOpen, 0}, {"fail", Open, 8 * time.Second}, {"retry", HalfOpen, 0}, {"ok", Closed, 0}}},
		{"a retry while closed changes nothing", []step{{"retry", Closed, 0}}},
		{"the delay stops at the cap", []step{{"fail", Closed, time.Second}, {"fail", Closed, 2 * time.Second}, {"fail", Open, 4 * time.Second},
			{"fail", Open, 8 * time.Second}, {"fail", Open, 10 * time.Second}, {"fail", Open, 10 * time.Second}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := Breaker{OpenAfter: 3, Backoff: wait.Backoff{Duration: time.Second, Cap: 10 * time.Second},
				Jitter: func(n int64) int64 { return n - 1 }} // no time taken off: the full delay
			for i, s := range tc.steps {
				var d time.Duration
				switch s.event {
				case "fail":
					d = b.Failure()
				case "ok":
					b.Success()
				case "retry":
					b.Retry()
				}
				if b.State() != s.state || d != s.delay {
					t.Fatalf("step %d (%s): state %s delay %s, want %s %s", i, s.event, b.State(), d, s.state, s.delay)
				}
			}
		})
	}
}

func TestBreakerJitterTakesOffAtMostHalf(t *testing.T) {
	b := Breaker{OpenAfter: 3, Backoff: wait.Backoff{Duration: 4 * time.Second, Cap: time.Minute}, Jitter: func(int64) int64 { return 0 }}
	if d := b.Failure(); d != 2*time.Second {
		t.Fatalf("with all the jitter taken off: %s, want 2s", d)
	}
	b = Breaker{OpenAfter: 3, Backoff: wait.Backoff{Duration: 4 * time.Second, Cap: time.Minute}}
	for range 100 {
		b.Success()
		if d := b.Failure(); d < 2*time.Second || d > 4*time.Second {
			t.Fatalf("delay %s outside [2s, 4s]", d)
		}
	}
}
