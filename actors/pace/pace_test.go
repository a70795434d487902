package pace

import (
	"testing"
	"time"
)

// TestRunsStayAShareOfTheTime: work that is always waiting and runs as
// soon as the budget allows takes at most a Share-th of the time, plus
// the burst, whatever a run costs, and no less than that share (the
// budget is used, not held back further). Both callers' rules are tried:
// wait until the budget holds the last run's cost (an inventory's build,
// which costs about as much each time), or only until it is out of debt
// (a binding's export, whose cost varies).
func TestRunsStayAShareOfTheTime(t *testing.T) {
	for _, rule := range []struct {
		name string
		need func(b *Budget) time.Duration
	}{
		{"the last cost", func(b *Budget) time.Duration { return b.Last() }},
		{"out of debt", func(*Budget) time.Duration { return 0 }},
	} {
		for _, share := range []int{4, 5} {
			for _, cost := range []time.Duration{50 * time.Millisecond, 300 * time.Millisecond, 2 * time.Second} {
				t.Run(rule.name+"/"+time.Duration(share).String()+"/"+cost.String(), func(t *testing.T) {
					start := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
					b := &Budget{Share: share, Burst: time.Second}
					now, running, runs := start, time.Duration(0), 0
					for now.Sub(start) < 10*time.Minute {
						now = now.Add(b.Wait(now, rule.need(b))) // work is always waiting
						now = now.Add(cost)
						b.Spend(cost, now)
						running += cost
						runs++
					}
					elapsed := now.Sub(start)
					// the budget's share, what it held at first, and the
					// run it let start out of debt
					if limit := elapsed/time.Duration(share) + max(b.Burst, cost) + cost; running > limit {
						t.Fatalf("%d runs of %s took %s of %s, more than %s", runs, cost, running, elapsed, limit)
					}
					if floor := elapsed/time.Duration(share+1) - 2*cost; running < floor {
						t.Fatalf("%d runs of %s took only %s of %s (under %s)", runs, cost, running, elapsed, floor)
					}
				})
			}
		}
	}
}

// TestWait checks the wait after given runs, each ending at the time
// given.
func TestWait(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	spent := func(runs ...any) *Budget {
		b := &Budget{Share: 5, Burst: time.Second}
		for i := 0; i < len(runs); i += 2 {
			b.Spend(runs[i].(time.Duration), runs[i+1].(time.Time))
		}
		return b
	}
	for _, tc := range []struct {
		name string
		b    *Budget
		need time.Duration
		want time.Duration
	}{
		{"nothing ran: full", spent(), time.Second, 0},
		{"more than it ever holds", spent(), 2 * time.Second, 5 * time.Second},
		{"one cheap run", spent(ms(10), now), ms(10), 0},
		{"three runs in a row used it up: five times what is short", spent(ms(400), now.Add(-ms(800)), ms(400), now.Add(-ms(400)), ms(400), now),
			// held: 1 s, then 1 s - 400 ms + 80 ms, 680 ms - 400 ms + 80 ms,
			// 360 ms - 400 ms + 80 ms = 40 ms now; short by 360 ms
			ms(400), ms(1800)},
		{"the same, only out of debt", spent(ms(400), now.Add(-ms(800)), ms(400), now.Add(-ms(400)), ms(400), now), 0, 0},
		{"two runs of 2 s back to back: five times the debt", spent(2*time.Second, now.Add(-2*time.Second), 2*time.Second, now), 0,
			// full (2 s, the cost) when the first started, empty when it
			// ended, 0.4 s when the second started, -1.6 s after it, and
			// -1.2 s now
			6 * time.Second},
		{"a run costlier than the burst fits after a quiet spell", spent(3*time.Second, now.Add(-time.Hour), 3*time.Second, now.Add(-30*time.Minute)), 3 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.b.Wait(now, tc.need); got != tc.want {
				t.Fatalf("Wait = %s, want %s", got, tc.want)
			}
		})
	}
}
