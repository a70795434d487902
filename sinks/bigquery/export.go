package bigquery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/googleapi"

	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks"
)

// export runs one export of one inventory.
type export struct {
	s        *Sink
	ns, name string
	at       time.Time
	sql      statements
	staged   bool
	// kept are the targets whose rows a partial snapshot leaves as the
	// table holds them.
	kept []string
}

// keepParams are the parameters of a statement that leaves the kept
// targets' rows alone.
func (x *export) keepParams() []bigquery.QueryParameter {
	if len(x.kept) == 0 {
		return nil
	}
	return []bigquery.QueryParameter{keptParam(x.kept)}
}

// clear deletes every row of the inventory (but the kept targets'): the
// snapshot is empty.
func (x *export) clear(ctx context.Context) (sinks.Ack, error) {
	deleted, err := x.dml(ctx, x.sql.deleteAll(len(x.kept) > 0), false, x.keepParams()...)
	if err != nil {
		return sinks.Ack{}, err
	}
	n, err := x.count(ctx)
	return sinks.Ack{Rows: n, Written: deleted}, err
}

// full stages every row, merges them (rewriting only rows that differ)
// and deletes the rows the snapshot does not hold.
func (x *export) full(ctx context.Context, rs []*rows.Row) (sinks.Ack, error) {
	b, err := x.stage(ctx, rs, nil)
	if err != nil {
		return sinks.Ack{}, err
	}
	merged, err := x.dml(ctx, x.sql.merge(), true)
	if err != nil {
		return sinks.Ack{}, err
	}
	deleted, err := x.dml(ctx, x.sql.deleteUnstaged(len(x.kept) > 0), false, x.keepParams()...)
	if err != nil {
		return sinks.Ack{}, err
	}
	n, err := x.count(ctx)
	return sinks.Ack{Rows: n, Written: merged + deleted, Bytes: b}, err
}

// delta stages what changed and runs only the statements it needs.
func (x *export) delta(ctx context.Context, d *rows.Delta) (sinks.Ack, error) {
	var ack sinks.Ack
	if !d.Empty() {
		b, err := x.stage(ctx, d.Upserts, d.Deletes)
		if err != nil {
			return ack, err
		}
		ack.Bytes = b
	}
	if len(d.Upserts) > 0 {
		n, err := x.dml(ctx, x.sql.merge(), true)
		if err != nil {
			return ack, err
		}
		ack.Written += n
	}
	if len(d.Deletes) > 0 {
		n, err := x.dml(ctx, x.sql.deleteStaged(), false)
		if err != nil {
			return ack, err
		}
		ack.Written += n
	}
	n, err := x.count(ctx)
	ack.Rows = n
	return ack, err
}

// staged is one line of the staging NDJSON.
type staged struct {
	Op                string  `json:"op"`
	TargetName        string  `json:"target_name"`
	SourceUID         string  `json:"source_uid"`
	ResourceNamespace *string `json:"resource_namespace,omitempty"`
	Payload           *string `json:"payload,omitempty"`
}

// stage loads upserts (whole rows) and deletes (keys) into the staging
// table with one load job, replacing what it held.
func (x *export) stage(ctx context.Context, upserts, deletes []*rows.Row) (int64, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, r := range upserts {
		ns := r.Namespace
		if ns == "" {
			ns = x.ns
		}
		payload := string(r.JSON())
		if err := enc.Encode(staged{Op: "upsert", TargetName: r.TargetName, SourceUID: r.UID, ResourceNamespace: &ns, Payload: &payload}); err != nil {
			return 0, fmt.Errorf("stage row %s: %w", r.Key(), err)
		}
	}
	for _, r := range deletes {
		if err := enc.Encode(staged{Op: "delete", TargetName: r.TargetName, SourceUID: r.UID}); err != nil {
			return 0, fmt.Errorf("stage key %s: %w", r.Key(), err)
		}
	}
	size := int64(buf.Len())
	src := bigquery.NewReaderSource(&buf)
	src.SourceFormat = bigquery.JSON
	src.Schema = stagingSchema()
	loader := x.s.client.Dataset(x.s.cfg.Dataset).Table(x.sql.stageName()).LoaderFrom(src)
	loader.WriteDisposition = bigquery.WriteTruncate
	loader.CreateDisposition = bigquery.CreateIfNeeded
	loader.MediaOptions = []googleapi.MediaOption{googleapi.ChunkRetryDeadline(callTimeout)}
	x.staged = true
	loader.JobID = newJobID()
	job, err := loader.Run(ctx)
	if err != nil {
		if job = x.started(loader.JobID); job == nil {
			return 0, fmt.Errorf("load the changed rows into %s: %w", x.sql.stage, err)
		}
	}
	if err := x.wait(ctx, job, nil); err != nil {
		return 0, fmt.Errorf("load the changed rows into %s: %w", x.sql.stage, err)
	}
	return size, nil
}

// dml runs a data-manipulation statement and returns the rows it changed.
func (x *export) dml(ctx context.Context, sql string, withTime bool, extra ...bigquery.QueryParameter) (int, error) {
	q := x.s.client.Query(sql)
	q.Parameters = append(params(x.ns, x.name, x.s.cfg.Cluster, x.at, withTime), extra...)
	release, err := x.s.slot(ctx)
	if err != nil {
		return 0, err
	}
	job, err := x.run(ctx, q)
	if err != nil {
		release()
		return 0, err
	}
	if err := x.wait(ctx, job, release); err != nil {
		return 0, fmt.Errorf("%s: %w", verb(sql), err)
	}
	st := job.LastStatus()
	if st == nil || st.Statistics == nil {
		return 0, fmt.Errorf("%s: the job reported no statistics", verb(sql))
	}
	qs, ok := st.Statistics.Details.(*bigquery.QueryStatistics)
	if !ok {
		return 0, fmt.Errorf("%s: the job reported no query statistics", verb(sql))
	}
	return int(qs.NumDMLAffectedRows), nil
}

// count reads how many rows the table holds for the inventory.
func (x *export) count(ctx context.Context) (int, error) {
	q := x.s.client.Query(x.sql.count())
	q.Parameters = params(x.ns, x.name, x.s.cfg.Cluster, x.at, false)
	job, err := x.run(ctx, q)
	if err != nil {
		return 0, err
	}
	it, err := job.Read(ctx)
	if err != nil {
		return 0, fmt.Errorf("count rows: %w", err)
	}
	var row []bigquery.Value
	if err := it.Next(&row); err != nil {
		if errors.Is(err, done) {
			return 0, errors.New("count rows: no result")
		}
		return 0, fmt.Errorf("count rows: %w", err)
	}
	n, ok := row[0].(int64)
	if len(row) != 1 || !ok {
		return 0, fmt.Errorf("count rows: unexpected result %v", row)
	}
	return int(n), nil
}

// run starts a query job.
func (x *export) run(ctx context.Context, q *bigquery.Query) (*bigquery.Job, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	q.JobID = newJobID()
	job, err := q.Run(cctx)
	if err != nil {
		if job = x.started(q.JobID); job == nil {
			return nil, fmt.Errorf("start %s: %w", verb(q.Q), err)
		}
	}
	return job, nil
}

// wait waits for a job and returns the error it ended with, then calls
// release (may be nil). A job the export stops waiting for is watched
// until it ends instead (abandon), and release called then.
func (x *export) wait(ctx context.Context, job *bigquery.Job, release func()) error {
	st, err := job.Wait(ctx)
	if err != nil && ctx.Err() != nil {
		x.abandon(job, release)
		return err
	}
	if release != nil {
		release()
	}
	if err != nil {
		return err
	}
	return st.Err()
}

// dropStage deletes the staging table, so that no copy of the rows stays
// beside the table; a failure is harmless (the next load replaces it).
func (x *export) dropStage() {
	if !x.staged {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	_ = x.s.client.Dataset(x.s.cfg.Dataset).Table(x.sql.stageName()).Delete(ctx)
}

// verb names a statement in messages.
func verb(sql string) string {
	if i := bytes.IndexAny([]byte(sql), " \n"); i > 0 {
		return sql[:i]
	}
	return sql
}
