package main

import (
	"context"
	"sync"
	"time"

	"kollect.dev/kollect/pipeline/model/rows"
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
	dupes   int // upserts of a key the sink already held with the same content
}

func newRecorder(delay time.Duration) *recorder {
	return &recorder{delay: delay, rows: map[rows.Key]*rows.Row{}}
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
	if d.Full() {
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
	return sinks.Ack{Rows: len(r.rows), Written: len(d.Upserts) + len(d.Deletes)}, nil
}

// exportCount is how many exports the sink acknowledged.
func (r *recorder) exportCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exports
}

// snapshot copies what the sink holds.
func (r *recorder) snapshot() (map[rows.Key]*rows.Row, int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[rows.Key]*rows.Row, len(r.rows))
	for k, v := range r.rows {
		out[k] = v
	}
	return out, r.exports, r.dupes
}
