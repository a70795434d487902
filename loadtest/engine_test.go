package main

import (
	"context"
	"testing"
	"time"
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
