package bigquery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/googleapi"

	"kollect.dev/kollect/sinks"
)

// maxBatchBytes bounds the staged rows of one batch: more waits for the
// next one. An export larger than that runs alone.
const maxBatchBytes = 64 << 20

// errClosed fails the exports still queued when the last sink of a table
// closes.
var errClosed = errors.New("the BigQuery sink was closed")

// request is one inventory's export, queued for a batch.
type request struct {
	ns, name string
	full     bool
	// part is the inventory's staged rows (NDJSON): its header, then its
	// upserts, deletes and kept targets.
	part             []byte
	upserts, deletes int // rows staged

	done chan struct{}
	res  result
	err  error
}

// result is what a batch did for one inventory.
type result struct {
	rows, written int
}

func (r *request) scope() string { return scopeKey(r.ns, r.name) }

// scopeKey names an inventory as @scopes does and as the per-inventory
// results are keyed: "namespace/name" (neither holds a '/'). It takes a
// result row's two columns as they are read.
func scopeKey(namespace, name any) string { return fmt.Sprint(namespace) + "/" + fmt.Sprint(name) }

func (r *request) finish(res result, err error) {
	r.res, r.err = res, err
	close(r.done)
}

// submit queues r and waits for the batch that runs it. When ctx ends
// first, r leaves the queue, or, when its batch already runs, the batch
// runs on without it: the inventory's next export is queued behind it,
// so no two batches of one inventory ever run at once.
func (t *table) submit(ctx context.Context, r *request) (result, error) {
	r.done = make(chan struct{})
	t.mu.Lock()
	if t.ctx.Err() != nil {
		t.mu.Unlock()
		return result{}, errClosed
	}
	t.queue = append(t.queue, r)
	if !t.running {
		t.running, t.idle = true, make(chan struct{})
		go t.loop()
	}
	t.mu.Unlock()
	select {
	case <-r.done:
		return r.res, r.err
	case <-ctx.Done():
	}
	t.mu.Lock()
	for i, q := range t.queue {
		if q == r {
			t.queue = append(t.queue[:i], t.queue[i+1:]...)
			break
		}
	}
	t.mu.Unlock()
	return result{}, fmt.Errorf("wait for the batch: %w", ctx.Err())
}

// loop runs batches until the queue is empty.
func (t *table) loop() {
	for {
		t.mu.Lock()
		batch := t.next()
		if len(batch) == 0 {
			t.running = false
			close(t.idle)
			t.idle = nil
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		t.run(batch)
	}
}

// next takes the next batch off the queue: in queue order, one export per
// inventory (a second waits for the next batch), up to maxBatchBytes.
func (t *table) next() []*request {
	var batch, rest []*request
	seen := map[string]bool{}
	size := 0
	for _, r := range t.queue {
		if seen[r.scope()] || (len(batch) > 0 && size+len(r.part) > maxBatchBytes) {
			rest = append(rest, r)
			continue
		}
		seen[r.scope()] = true
		size += len(r.part)
		batch = append(batch, r)
	}
	t.queue = rest
	return batch
}

// run runs one batch and answers each of its exports.
func (t *table) run(batch []*request) {
	ctx, cancel := context.WithTimeout(t.ctx, batchFor)
	defer cancel()
	err := t.prepare(ctx) // a table that cannot be written fails every export alike
	var res map[string]result
	if err == nil {
		res, err = t.apply(ctx, batch)
	}
	if err != nil && len(batch) > 1 && errors.Is(err, sinks.ErrPermanent) && t.prepared() {
		// One inventory's rows may be what BigQuery refuses: each runs
		// alone, so that only its export fails. The statements are
		// idempotent, so what the failed batch did is harmless.
		for _, r := range batch {
			t.run([]*request{r})
		}
		return
	}
	for _, r := range batch {
		if err != nil {
			r.finish(result{}, err)
			continue
		}
		r.finish(res[r.scope()], nil)
	}
}

// apply runs a batch's jobs: a load of every staged row into a staging
// table of its own, a MERGE when rows are staged, the stats, and a DELETE
// when rows go. A batch that stages nothing (no inventory changed) is one
// count.
func (t *table) apply(ctx context.Context, batch []*request) (map[string]result, error) {
	stage := t.cfg.Table + "_kollect_staging_" + newJobID()[len("kollect_"):]
	sql := newStatements(t.cfg.Project, t.cfg.Dataset, t.cfg.Table, stage)
	at := t.cfg.Clock.Now().UTC().Truncate(time.Microsecond)
	needs, upserts := false, false
	for _, r := range batch {
		needs = needs || r.full || r.upserts+r.deletes > 0
		upserts = upserts || r.upserts > 0
	}
	if !needs {
		return t.count(ctx, sql, batch)
	}
	defer t.drop(stage)
	if err := t.load(ctx, stage, batch); err != nil {
		return nil, err
	}
	if upserts {
		if _, err := t.dml(ctx, sql.merge(), at); err != nil {
			return nil, err
		}
	}
	stats, err := t.stats(ctx, sql, at)
	if err != nil {
		return nil, err
	}
	removing := 0
	for _, s := range stats {
		removing += s.gone
	}
	if removing > 0 {
		if _, err := t.dml(ctx, sql.remove(), time.Time{}); err != nil {
			return nil, err
		}
	}
	out := make(map[string]result, len(stats))
	for scope, s := range stats {
		out[scope] = result{rows: s.n - s.gone, written: s.wrote + s.gone}
	}
	return out, nil
}

// load fills the batch's staging table with one load job; the table
// expires after a day, should the drop that follows the batch not
// happen (the process killed).
func (t *table) load(ctx context.Context, stage string, batch []*request) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	err := t.client.Dataset(t.cfg.Dataset).Table(stage).Create(cctx, &bigquery.TableMetadata{
		Schema: stagingSchema(), ExpirationTime: t.cfg.Clock.Now().Add(24 * time.Hour),
		Description: "Kollect: the rows of one export batch, dropped after it"})
	cancel()
	if err != nil {
		return classify(t.cfg, "create the staging table", err)
	}
	parts := make([]io.Reader, 0, len(batch))
	for _, r := range batch {
		parts = append(parts, bytes.NewReader(r.part))
	}
	src := bigquery.NewReaderSource(io.MultiReader(parts...))
	src.SourceFormat = bigquery.JSON
	src.Schema = stagingSchema()
	loader := t.client.Dataset(t.cfg.Dataset).Table(stage).LoaderFrom(src)
	loader.WriteDisposition = bigquery.WriteTruncate
	loader.CreateDisposition = bigquery.CreateNever
	loader.MediaOptions = []googleapi.MediaOption{googleapi.ChunkRetryDeadline(callTimeout)}
	loader.JobID = newJobID()
	job, err := loader.Run(ctx)
	if err != nil {
		if job = t.started(loader.JobID); job == nil {
			return classify(t.cfg, "load the changed rows", err)
		}
	}
	if err := t.wait(ctx, job, nil); err != nil {
		return classify(t.cfg, "load the changed rows", err)
	}
	return nil
}

// drop deletes the staging table, so that no copy of the rows stays
// beside the table; a failure is harmless (it expires).
func (t *table) drop(stage string) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	_ = t.client.Dataset(t.cfg.Dataset).Table(stage).Delete(ctx)
}

// stat is what the stats say of one inventory.
type stat struct{ n, gone, wrote int }

// stats reads, per inventory of the batch, what stats() counts.
func (t *table) stats(ctx context.Context, sql statements, at time.Time) (map[string]stat, error) {
	q := t.client.Query(sql.stats())
	q.Parameters = []bigquery.QueryParameter{{Name: paramCluster, Value: t.cfg.Cluster}, {Name: paramExportedAt, Value: at}}
	return t.perInventory(ctx, q, 3)
}

// count reads how many rows the table holds for each inventory of a
// batch that stages nothing.
func (t *table) count(ctx context.Context, sql statements, batch []*request) (map[string]result, error) {
	scopes := make([]string, 0, len(batch))
	for _, r := range batch {
		scopes = append(scopes, r.scope())
	}
	q := t.client.Query(sql.count())
	q.Parameters = []bigquery.QueryParameter{{Name: paramCluster, Value: t.cfg.Cluster}, {Name: paramScopes, Value: scopes}}
	stats, err := t.perInventory(ctx, q, 1)
	out := make(map[string]result, len(stats))
	for scope, s := range stats {
		out[scope] = result{rows: s.n}
	}
	return out, err
}

// perInventory reads a query's rows of namespace, name and counts (n,
// then gone and wrote) into a stat per inventory.
func (t *table) perInventory(ctx context.Context, q *bigquery.Query, counts int) (map[string]stat, error) {
	out := map[string]stat{}
	err := t.read(ctx, q, 2+counts, func(row []bigquery.Value) error {
		var c [3]int
		for i, v := range row[2:] {
			n, ok := v.(int64)
			if !ok {
				return fmt.Errorf("unexpected result %v", row)
			}
			c[i] = int(n)
		}
		out[scopeKey(row[0], row[1])] = stat{n: c[0], gone: c[1], wrote: c[2]}
		return nil
	})
	return out, err
}

// read runs a query and hands each row of cols columns to each.
func (t *table) read(ctx context.Context, q *bigquery.Query, cols int, each func([]bigquery.Value) error) error {
	job, err := t.start(ctx, q)
	if err != nil {
		return err
	}
	it, err := job.Read(ctx)
	if err != nil {
		return classify(t.cfg, verb(q.Q), err)
	}
	for {
		var row []bigquery.Value
		switch err := it.Next(&row); {
		case errors.Is(err, done):
			return nil
		case err != nil:
			return classify(t.cfg, verb(q.Q), err)
		case len(row) != cols:
			return fmt.Errorf("bigquery %s: %d columns, want %d", verb(q.Q), len(row), cols)
		}
		if err := each(row); err != nil {
			return fmt.Errorf("bigquery %s: %w", verb(q.Q), err)
		}
	}
}

// dml runs a statement that changes the table, in one of the table's
// slots, and returns the rows it changed. A zero at leaves
// @exported_at out.
func (t *table) dml(ctx context.Context, sql string, at time.Time) (int, error) {
	q := t.client.Query(sql)
	q.Parameters = []bigquery.QueryParameter{{Name: paramCluster, Value: t.cfg.Cluster}}
	if !at.IsZero() {
		q.Parameters = append(q.Parameters, bigquery.QueryParameter{Name: paramExportedAt, Value: at})
	}
	release, err := t.slot(ctx)
	if err != nil {
		return 0, err
	}
	job, err := t.start(ctx, q)
	if err != nil {
		release()
		return 0, err
	}
	if err := t.wait(ctx, job, release); err != nil {
		return 0, classify(t.cfg, verb(sql), err)
	}
	st := job.LastStatus()
	if st == nil || st.Statistics == nil {
		return 0, fmt.Errorf("bigquery %s: the job reported no statistics", verb(sql))
	}
	qs, ok := st.Statistics.Details.(*bigquery.QueryStatistics)
	if !ok {
		return 0, fmt.Errorf("bigquery %s: the job reported no query statistics", verb(sql))
	}
	return int(qs.NumDMLAffectedRows), nil
}
