package bigquery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"

	"cloud.google.com/go/bigquery"

	"kollect.dev/kollect/sinks"
)

// table is what the sinks of this process that write one table with the
// same credentials share: the client, whether the table is prepared, and
// the queue of exports that run together as batches (batch.go). A
// thousand inventories on one table then make a few jobs per batch, not
// a few per inventory: BigQuery bounds the statements that change a table
// at once and the load jobs of a project per day.
type table struct {
	cfg    Config
	client *bigquery.Client

	// slots are the table's statement slots (dmlPerTable), shared with
	// the sinks that write it with other credentials.
	slots        chan struct{}
	releaseSlots func()

	// ctx ends when the last sink lets go of the table.
	ctx  context.Context
	stop context.CancelFunc

	mu         sync.Mutex
	isPrepared bool
	// writersReady is 1 once the writer table exists, -1 when the
	// credentials may not create it, 0 before the first try.
	writersReady int
	queue        []*request
	running      bool
	idle         chan struct{} // closed when no batch runs; nil while one does
	// reads wait for the next query of writer records (Sink.Writer);
	// reading is true while one runs.
	reads   []*writerRead
	reading bool
}

// tableKey is everything that makes two sinks' tables differ: the table,
// the cluster, the mode and how the sink reaches BigQuery (endpoint,
// location, credentials, transport). It holds the key: Clients hashes it.
func tableKey(cfg Config) string {
	sum := sha256.Sum256(cfg.Key)
	return fmt.Sprintf("%s\x00%s.%s.%s\x00%s\x00%s\x00%t\x00%s\x00%t\x00%t\x00%s",
		cfg.Endpoint, cfg.Project, cfg.Dataset, cfg.Table, cfg.Location, cfg.Cluster, cfg.Existing,
		hex.EncodeToString(sum[:]), cfg.Ambient, cfg.NoAuth, cfg.Transport)
}

// openTable builds the table's client and takes its statement slots.
func openTable(ctx context.Context, cfg Config, hc *http.Client) (*table, error) {
	c, err := newClient(ctx, cfg, hc)
	if err != nil {
		return nil, err
	}
	name := cfg.Endpoint + "\x00" + cfg.Project + "." + cfg.Dataset + "." + cfg.Table
	slots, release, err := cfg.Clients.Acquire("bigquery-table", name, func() (any, func(), error) {
		return make(chan struct{}, dmlPerTable), func() {}, nil
	})
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	t := &table{cfg: cfg, client: c, slots: slots.(chan struct{}), releaseSlots: release}
	t.ctx, t.stop = context.WithCancel(context.Background())
	return t, nil
}

// close fails the queued exports, ends the running batch (a job it
// started runs on in BigQuery) and releases the client.
func (t *table) close() {
	t.stop()
	t.mu.Lock()
	queued := t.queue
	t.queue = nil
	idle := t.idle
	t.mu.Unlock()
	for _, r := range queued {
		r.finish(result{}, errClosed)
	}
	if idle != nil {
		<-idle
	}
	_ = t.client.Close()
	t.releaseSlots()
}

// prepared reports whether prepare succeeded.
func (t *table) prepared() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.isPrepared
}

// prepare creates the table once (mode ensure), or checks its columns
// (mode existing).
func (t *table) prepare(ctx context.Context) error {
	if t.prepared() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cfg := t.cfg
	tb := t.client.Dataset(cfg.Dataset).Table(cfg.Table)
	if !cfg.Existing {
		err := tb.Create(ctx, &bigquery.TableMetadata{
			Schema:           Schema(),
			TimePartitioning: &bigquery.TimePartitioning{Type: bigquery.DayPartitioningType, Field: "exported_at"},
			Clustering:       &bigquery.Clustering{Fields: Clustering},
			Description:      "Kollect inventory rows (one per collected object)",
		})
		if err != nil && !hasStatus(err, http.StatusConflict) {
			if notFound(err) {
				return sinks.Permanent(fmt.Errorf("dataset %s.%s does not exist; Kollect does not create datasets", cfg.Project, cfg.Dataset))
			}
			return classify(cfg, "create table", err)
		}
	}
	md, err := tb.Metadata(ctx)
	if err != nil {
		if notFound(err) {
			return sinks.Permanent(fmt.Errorf("table %s.%s.%s does not exist; provisioning.mode is existing, so create it (see the BigQuery sink documentation) or use mode ensure",
				cfg.Project, cfg.Dataset, cfg.Table))
		}
		return classify(cfg, "read table", err)
	}
	if missing := missingColumns(md.Schema); len(missing) > 0 {
		return sinks.Permanent(fmt.Errorf("table %s.%s.%s lacks the columns %v (or has them with other types)", cfg.Project, cfg.Dataset, cfg.Table, missing))
	}
	t.mu.Lock()
	t.isPrepared = true
	t.mu.Unlock()
	return nil
}
