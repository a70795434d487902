package inventory

import (
	"testing"
	"time"
)

func TestFlushAfter(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		window time.Duration
		built  time.Time
		cost   time.Duration
		want   time.Duration
	}{
		{"first export: the default window", 0, time.Time{}, 0, 200 * time.Millisecond},
		{"a configured window", time.Second, time.Time{}, 0, time.Second},
		{"a cheap build", 0, now.Add(-10 * time.Millisecond), 10 * time.Millisecond, 200 * time.Millisecond},
		{"right after an expensive build: four times its cost", 0, now, time.Second, 4 * time.Second},
		{"part of that already passed", 0, now.Add(-3 * time.Second), time.Second, time.Second},
		{"a change after a quiet spell: only the window", 0, now.Add(-time.Minute), time.Second, 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := flushAfter(tc.window, tc.built, tc.cost, now); got != tc.want {
				t.Fatalf("flushAfter = %s, want %s", got, tc.want)
			}
		})
	}
}
