package inventory

import "time"

// buildBudget keeps building snapshots a bounded share of an inventory's
// time and still lets the end of a burst be exported at once. It holds up
// to buildBurst of build time (or the last build's cost, if more), fills
// at one buildShare-th of the time that passes, and each build spends what
// it cost. An export waits, beyond the batch window, until the budget holds
// the last build's cost: the next build is likely to cost about as much.
//
// Under constant change, builds take at most a fifth of the time, as when
// every export waited four times the last build's cost after it. That rule
// also held back the export of a burst's final state by four of the
// burst's builds, measured while the targets' evaluation competed with
// them for the cores: the cores then sat idle for up to half a second
// (engine-200k, 2026-12-05).
type buildBudget struct {
	left time.Duration // held at `at`; negative after a build costlier than expected
	at   time.Time     // zero: nothing built yet, the budget is full
	last time.Duration // the last build's cost
}

const (
	buildShare = 5           // builds take at most 1/buildShare of the time under constant change
	buildBurst = time.Second // the most build time the budget holds
)

// held is the build time the budget holds at now, up to most.
func (b *buildBudget) held(now time.Time, most time.Duration) time.Duration {
	if b.at.IsZero() {
		return most
	}
	return min(most, b.left+now.Sub(b.at)/buildShare)
}

// wait is how long from now until the budget holds the last build's cost.
func (b *buildBudget) wait(now time.Time) time.Duration {
	return max(0, (b.last-b.held(now, max(buildBurst, b.last)))*buildShare)
}

// spend records a build that cost cost and ended at end. The budget fills
// from the build's start on: a build that waited until the budget held
// its cost leaves it empty, and the next waits buildShare times as long.
func (b *buildBudget) spend(cost time.Duration, end time.Time) {
	start := end.Add(-cost)
	b.left, b.at, b.last = b.held(start, max(buildBurst, cost))-cost, start, cost
}
