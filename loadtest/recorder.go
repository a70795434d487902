package main

import (
	"context"
	"sync"
	"time"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// recorder is an in-memory sink backend that applies deltas the way a
// database would, optionally slowly, so engine mode can check what a sink
// ends up holding.
type recorder struct {
	delay time.Duration

	mu      sync.Mutex
	rows    map[rows.Key]*rows.Row
	exports int
	ackedAt time.Time // when the last export was acknowledged
	dupes   int       // upserts of a key the sink already held with the same content
}

// newRecorder builds a recorder sized for objects rows (the map's growth
// in a burst was the harness's, not the engine's).
func newRecorder(delay time.Duration, objects int) *recorder {
	return &recorder{delay: delay, rows: make(map[rows.Key]*rows.Row, objects)}
}

func (r *recorder) Export(ctx context.Context, d *rows.Delta) (sinks.Ack, error) {
	if r.delay > 0 {
		select {
		case <-time.After(r.delay):
		case <-ctx.Done():
			return sinks.Ack{}, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exports++
	if d.Full() && len(r.rows) > 0 { // a full export drops what it does not hold
		live := make(map[rows.Key]bool, len(d.Next.Rows))
		for _, row := range d.Next.Rows {
			live[row.Key()] = true
		}
		for k := range r.rows {
			if !live[k] {
				delete(r.rows, k)
			}
		}
	}
	for _, row := range d.Deletes {
		delete(r.rows, row.Key())
	}
	for _, row := range d.Upserts {
		if old, ok := r.rows[row.Key()]; ok && old.Equal(row) && !d.Full() {
			r.dupes++
		}
		r.rows[row.Key()] = row
	}
	r.ackedAt = time.Now()
	return sinks.Ack{Rows: len(r.rows), Written: len(d.Upserts) + len(d.Deletes)}, nil
}

// counts are how many exports the sink acknowledged and how many rows it
// holds.
func (r *recorder) counts() (exports, held int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exports, len(r.rows)
}

// snapshot copies what the sink holds, with how many exports it
// acknowledged, when the last, and the duplicates it saw.
func (r *recorder) snapshot() (map[rows.Key]*rows.Row, int, time.Time, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[rows.Key]*rows.Row, len(r.rows))
	for k, v := range r.rows {
		out[k] = v
	}
	return out, r.exports, r.ackedAt, r.dupes
}
