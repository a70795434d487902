// Package pace keeps a recurring, costly piece of work to a bounded share
// of the time: an inventory's snapshot builds, a binding's exports. Work
// that comes seldom runs at once; work that comes all the time waits, so
// each run carries more of what changed and the runs together take at most
// one Share-th of the time.
package pace

import "time"

// Budget is time that fills as time passes and that each run spends. It
// holds up to Burst (or the last run's cost, if more), fills at one
// Share-th of the time that passes, and each run spends what it cost. A run
// that cost more than the budget held leaves it short; the caller waits
// until it is full enough again (Wait).
//
// The zero Budget is unusable: set Share (≥ 1) and Burst.
type Budget struct {
	Share int           // runs take at most 1/Share of the time under constant demand
	Burst time.Duration // the most run time the budget holds

	left time.Duration // held at `at`; negative after a run costlier than what was held
	at   time.Time     // zero: nothing ran yet, the budget is full
	last time.Duration // the last run's cost
}

// Last is the last run's cost (0 before the first).
func (b *Budget) Last() time.Duration { return b.last }

// held is the run time the budget holds at now.
func (b *Budget) held(now time.Time) time.Duration {
	most := max(b.Burst, b.last)
	if b.at.IsZero() {
		return most
	}
	return min(most, b.left+now.Sub(b.at)/time.Duration(b.Share))
}

// Wait is how long from now until the budget holds need (0 if it does).
func (b *Budget) Wait(now time.Time, need time.Duration) time.Duration {
	return max(0, (need-b.held(now))*time.Duration(b.Share))
}

// Spend records a run that cost cost and ended at end. The budget fills
// from the run's start on: a run that waited until the budget held its
// cost leaves it empty.
func (b *Budget) Spend(cost time.Duration, end time.Time) {
	start := end.Add(-cost)
	b.last = cost // held up to max(Burst, cost) when the run started
	b.left, b.at = b.held(start)-cost, start
}
