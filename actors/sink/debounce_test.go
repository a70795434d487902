package sink_test

import (
	"testing"
	"time"

	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/model/rows"
)

func TestDebounce(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	snap := func(sum string, gen int64) *rows.Snapshot {
		return &rows.Snapshot{Checksum: sum, Inventory: rows.Identity{Generation: gen}}
	}
	cases := []struct {
		name     string
		interval time.Duration
		acked    *rows.Snapshot
		latest   *rows.Snapshot
		now      time.Time
		export   bool
		wait     time.Duration
	}{
		{"nothing to export", 30 * time.Second, nil, nil, t0, false, 0},
		{"first export", 30 * time.Second, nil, snap("a", 1), t0, true, 0},
		{"material change exports at once", 30 * time.Second, snap("a", 1), snap("b", 1), t0.Add(time.Second), true, 0},
		{"spec edit exports at once", 30 * time.Second, snap("a", 1), snap("a", 2), t0.Add(time.Second), true, 0},
		{"unchanged within the interval waits", 30 * time.Second, snap("a", 1), snap("a", 1), t0.Add(10 * time.Second), false, 20 * time.Second},
		{"unchanged after the interval re-exports", 30 * time.Second, snap("a", 1), snap("a", 1), t0.Add(30 * time.Second), true, 0},
		{"interval 0 never re-exports unchanged content", 0, snap("a", 1), snap("a", 1), t0.Add(time.Hour), false, 0},
		// The same rows, but the sink now keeps a held target's rows, or
		// the held target listed: what the sink must hold changed.
		{"a target stops listing exports at once", 0, snap("a", 1), snap("a", 1).Keeping([]string{"held"}), t0.Add(time.Second), true, 0},
		{"a held target listing exports at once", 0, snap("a", 1).Keeping([]string{"held"}), snap("a", 1), t0.Add(time.Second), true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := sink.Debounce{Interval: tc.interval, Now: func() time.Time { return tc.now }}
			export, wait := d.Decide(tc.acked, t0, tc.latest)
			if export != tc.export || wait != tc.wait {
				t.Fatalf("want (%v, %s), got (%v, %s)", tc.export, tc.wait, export, wait)
			}
		})
	}
}
