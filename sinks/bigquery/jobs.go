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
// queues a few more; past that it fails them. The tables of this process
// that write one BigQuery table (sinks with different credentials each
// batch on their own) therefore share dmlPerTable slots: a statement
// takes one before it starts and gives it back once BigQuery reports it
// done, so the process never queues statements in BigQuery nor has them
// refused.
const dmlPerTable = 2

// A job runs to its end in BigQuery whether or not anyone waits for it,
// so a batch waits for its jobs however long its exports wait (an export
// whose context ends leaves the batch running, and its inventory's next
// export queues behind it): no load or statement of a batch ever runs
// beside the next batch's. batchFor bounds that wait; only the last sink
// of a table letting go of it (closing) ends it sooner.
const batchFor = 15 * time.Minute

// callTimeout bounds one API call and the client's own retries of it (a
// refused connection is retried until the context ends): the binding's
// back-off and circuit breaker take over from there.
const callTimeout = 15 * time.Second

// newJobID is the id of a job the sink starts: chosen here rather than by
// the client library, so that a job whose start went unanswered can be
// found (started).
func newJobID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "kollect_" + hex.EncodeToString(b[:])
}

// start starts a query job.
func (t *table) start(ctx context.Context, q *bigquery.Query) (*bigquery.Job, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	q.JobID = newJobID()
	job, err := q.Run(cctx)
	if err != nil {
		if job = t.started(q.JobID); job == nil {
			return nil, classify(t.cfg, "start "+verb(q.Q), err)
		}
	}
	return job, nil
}

// started finds the job a failed start may have created all the same: the
// request reached BigQuery and its answer was lost (a connection reset,
// the client library's retry answered 409 Already Exists). The batch then
// goes on with that job, instead of starting a second one beside it. nil
// when BigQuery has no such job or cannot say.
func (t *table) started(id string) *bigquery.Job {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	job, err := t.client.JobFromID(ctx, id)
	if err != nil {
		return nil
	}
	return job
}

// slot takes one of the table's statement slots, or fails when ctx ends.
func (t *table) slot(ctx context.Context) (release func(), err error) {
	select {
	case t.slots <- struct{}{}:
		return func() { <-t.slots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the other statements on %s: %w", t.cfg.Table, ctx.Err())
	}
}

// wait waits for a job and returns the error it ended with, then calls
// release (may be nil).
func (t *table) wait(ctx context.Context, job *bigquery.Job, release func()) error {
	st, err := job.Wait(ctx)
	if release != nil {
		release()
	}
	if err != nil {
		return err
	}
	return st.Err()
}

// verb names a statement in messages.
func verb(sql string) string {
	for i, r := range sql {
		if r == ' ' || r == '\n' {
			return sql[:i]
		}
	}
	return sql
}
