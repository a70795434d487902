package bigquery

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"cloud.google.com/go/bigquery"
)

// BigQuery runs at most two statements that change one table at once and
// queues a few more; past that it fails them. The sinks of this process
// that write one table (a thousand inventories on one table) therefore
// share dmlPerTable slots: a statement takes one before it starts and
// gives it back once BigQuery reports it done, so the process never
// queues statements in BigQuery nor has them refused.
const dmlPerTable = 2

// A job runs to its end in BigQuery whether or not anyone waits for it.
// An export whose context ends while it waits for a job (a cancel, a
// shutdown, the binding's timeout) leaves the job running: the next
// export of the inventory would then load the staging table or change
// the table while it runs (a late load replacing the newer staged rows,
// two merges of the same rows at once). So a job left behind is watched
// until it ends, for at most abandonedFor, and the inventory's next
// export waits for that first; a statement's slot is given back only
// then.
const abandonedFor = 15 * time.Minute

// newJobID is the id of a job the sink starts: chosen here rather than by
// the client library, so that a job whose start went unanswered can be
// found (started).
func newJobID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "kollect_" + hex.EncodeToString(b[:])
}

// started finds the job a failed start may have created all the same: the
// request reached BigQuery and its answer was lost (the export's context
// ended, a connection was reset). The export then goes on with that job,
// and waits for it (or leaves it watched, abandon) like any other, instead
// of starting a second one beside it. nil when BigQuery has no such job or
// cannot say.
func (x *export) started(id string) *bigquery.Job {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	job, err := x.s.client.JobFromID(ctx, id)
	if err != nil {
		return nil
	}
	return job
}

// slot takes one of the table's statement slots, or fails when ctx ends.
func (s *Sink) slot(ctx context.Context) (release func(), err error) {
	select {
	case s.slots <- struct{}{}:
		return func() { <-s.slots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the other statements on %s: %w", s.cfg.Table, ctx.Err())
	}
}

// abandon watches a job the export stopped waiting for, then calls
// release (may be nil). The inventory's next export waits for it (settle).
func (x *export) abandon(job *bigquery.Job, release func()) {
	done := make(chan struct{})
	s, key := x.s, x.ns+"/"+x.name
	s.mu.Lock()
	s.abandoned[key] = done
	s.mu.Unlock()
	go func() {
		defer close(done)
		if release != nil {
			defer release()
		}
		ctx, cancel := context.WithTimeout(context.Background(), abandonedFor)
		defer cancel()
		_, _ = job.Wait(ctx) // its outcome is the next export's to find
		s.mu.Lock()
		if s.abandoned[key] == done {
			delete(s.abandoned, key)
		}
		s.mu.Unlock()
	}()
}

// settle waits until no job an earlier export of the inventory left
// behind is still running.
func (s *Sink) settle(ctx context.Context, namespace, name string) error {
	s.mu.Lock()
	done := s.abandoned[namespace+"/"+name]
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the jobs of the last export, still running in BigQuery: %w", ctx.Err())
	}
}
