package inventory

import (
	"testing"
	"time"

	"kollect.dev/kollect/actors/pace"
)

func TestFlushAfter(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	// spent is a budget after builds of the given costs, each ending at
	// the time given.
	spent := func(builds ...any) *pace.Budget {
		b := &pace.Budget{Share: buildShare, Burst: buildBurst}
		for i := 0; i < len(builds); i += 2 {
			b.Spend(builds[i].(time.Duration), builds[i+1].(time.Time))
		}
		return b
	}
	for _, tc := range []struct {
		name   string
		window time.Duration
		budget *pace.Budget
		want   time.Duration
	}{
		{"first export: the default window", 0, spent(), 200 * time.Millisecond},
		{"a configured window", time.Second, spent(), time.Second},
		{"a cheap build", 0, spent(10*time.Millisecond, now), 200 * time.Millisecond},
		{"an expensive build after a quiet spell: the budget holds it", 0, spent(400*time.Millisecond, now), 200 * time.Millisecond},
		{"three builds in a row used the budget up: five times what is short", 0,
			spent(400*time.Millisecond, now.Add(-800*time.Millisecond), 400*time.Millisecond, now.Add(-400*time.Millisecond), 400*time.Millisecond, now),
			// held: 1 s, then 1 s - 400 ms + 80 ms, 680 ms - 400 ms + 80 ms,
			// 360 ms - 400 ms + 80 ms = 40 ms now; short by 360 ms
			1800 * time.Millisecond},
		{"part of that already passed", 0,
			spent(400*time.Millisecond, now.Add(-1800*time.Millisecond), 400*time.Millisecond, now.Add(-1400*time.Millisecond), 400*time.Millisecond, now.Add(-time.Second)),
			800 * time.Millisecond},
		{"a build costlier than the burst still fits after a quiet spell", 0, spent(3*time.Second, now.Add(-time.Hour), 3*time.Second, now.Add(-30*time.Minute)), 200 * time.Millisecond},
		{"right after a build costlier than the burst: four times its cost", 0, spent(3*time.Second, now), 12 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := flushAfter(tc.window, tc.budget, now); got != tc.want {
				t.Fatalf("flushAfter = %s, want %s", got, tc.want)
			}
		})
	}
}
