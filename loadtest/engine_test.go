package main

import (
	"context"
	"testing"
	"time"

	"kollect.dev/kollect/model/rows"
)

// TestEngineModeLosesNothing: a short engine run delivers every final row
// to the sink, with no duplicates. Figures are logged, never asserted.
func TestEngineModeLosesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := RunEngine(ctx, EngineOptions{Objects: 3000, Updates: 6000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Lost != 0 || res.Duplicated != 0 || res.SinkRows != 3000 {
		t.Fatalf("lost %d, duplicated %d, sink rows %d", res.Lost, res.Duplicated, res.SinkRows)
	}
	t.Logf("%d events in %v: %.0f events/s, %.1f allocs/event, %.0f B/row, %d exports",
		res.Events, res.Elapsed, res.EventsPerSec, res.AllocsPerEvent, res.BytesPerRow, res.Exports)
}

// TestSlowSinkStaysBounded: with a sink that takes 200 ms per export while
// updates keep coming, the backlog does not pile up in mailboxes (a newer
// snapshot replaces an unsent one) and the sink still ends with every
// final row.
func TestSlowSinkStaysBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := RunEngine(ctx, EngineOptions{Objects: 2000, Updates: 3000, UpdateRate: 2000, SinkDelay: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Lost != 0 || res.SinkRows != 2000 {
		t.Fatalf("lost %d, sink rows %d", res.Lost, res.SinkRows)
	}
	if res.Exports < 3 || res.MaxMailbox["sink"] > 10 || res.MaxMailbox["inventory"] > 1000 {
		t.Fatalf("%d exports; mailboxes under a slow sink: %v", res.Exports, res.MaxMailbox)
	}
	t.Logf("slow sink: %d exports for %d events, max mailbox %v, peak RSS %d MiB", res.Exports, res.Events, res.MaxMailbox, res.PeakRSSBytes>>20)
}

// TestStaleCountsOldAndMissingRows: the engine run ends only when stale
// finds nothing, so it must count every row the sink lacks or holds at an
// older version.
func TestStaleCountsOldAndMissingRows(t *testing.T) {
	row := func(uid string, replicas any) *rows.Row {
		t.Helper()
		r, err := rows.New(rows.Row{UID: uid, Name: uid}, rows.Attributes{{Name: "ready", Value: int64(0)}, {Name: "replicas", Value: replicas}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	keys := []rows.Key{{UID: "a"}, {UID: "b"}, {UID: "c"}}
	for _, tc := range []struct {
		name  string
		held  map[rows.Key]*rows.Row
		final []int
		want  int
	}{
		{"all current", map[rows.Key]*rows.Row{keys[0]: row("a", int64(1)), keys[1]: row("b", int64(2)), keys[2]: row("c", int64(3))}, []int{1, 2, 3}, 0},
		{"one old", map[rows.Key]*rows.Row{keys[0]: row("a", int64(1)), keys[1]: row("b", int64(1)), keys[2]: row("c", int64(3))}, []int{1, 2, 3}, 1},
		{"one missing, one old", map[rows.Key]*rows.Row{keys[0]: row("a", int64(1)), keys[2]: row("c", int64(2))}, []int{1, 2, 3}, 2},
		{"not a number", map[rows.Key]*rows.Row{keys[0]: row("a", "1"), keys[1]: row("b", int64(2)), keys[2]: row("c", int64(3))}, []int{1, 2, 3}, 1},
		{"empty sink", map[rows.Key]*rows.Row{}, []int{1, 2, 3}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stale(tc.held, keys, tc.final); got != tc.want {
				t.Fatalf("stale = %d, want %d", got, tc.want)
			}
		})
	}
}
