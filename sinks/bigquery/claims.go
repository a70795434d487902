package bigquery

import (
	"context"
	"fmt"
	"net/http"

	"cloud.google.com/go/bigquery"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// writersTable records which operator writes each inventory of each table
// (sinks.Claims), in the sink's dataset: the rows' table keeps upstream's
// columns.
const writersTable = "kollect_writers"

var _ sinks.Claims = (*Sink)(nil)

func writersSchema() bigquery.Schema {
	req := func(name string, t bigquery.FieldType) *bigquery.FieldSchema {
		return &bigquery.FieldSchema{Name: name, Type: t, Required: true}
	}
	return bigquery.Schema{req("sink_table", bigquery.StringFieldType), req("cluster", bigquery.StringFieldType),
		req("inventory_namespace", bigquery.StringFieldType), req("inventory_name", bigquery.StringFieldType),
		req("writer", bigquery.StringFieldType), req("updated_at", bigquery.TimestampFieldType)}
}

const writerKey = scopeCondition + ` AND t.sink_table = @sink_table`

// ensureWriters creates the writer table once. Credentials that may not
// create it (mode existing on a locked-down dataset) run without writer
// records: ok is false, and the sink exports as before.
func (t *table) ensureWriters(ctx context.Context) (ok bool, err error) {
	if err := t.prepare(ctx); err != nil {
		return false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.writersReady != 0 {
		return t.writersReady > 0, nil
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	err = t.client.Dataset(t.cfg.Dataset).Table(writersTable).Create(cctx, &bigquery.TableMetadata{Schema: writersSchema(),
		Description: "Kollect: which operator writes each inventory of each table"})
	switch {
	case err == nil, hasStatus(err, http.StatusConflict):
		t.writersReady = 1
	case hasStatus(err, http.StatusForbidden):
		t.writersReady = -1
		return false, nil
	default:
		return false, classify(t.cfg, "create the writer table", err)
	}
	return true, nil
}

// writerParams are the parameters of a statement on one writer record.
func (s *Sink) writerParams(id rows.Identity, writer string) []bigquery.QueryParameter {
	p := append(params(id.Namespace, id.Name, s.cfg.Cluster), bigquery.QueryParameter{Name: "sink_table", Value: s.cfg.Table})
	if writer != "" {
		p = append(p, bigquery.QueryParameter{Name: "writer", Value: writer})
	}
	return p
}

func (s *Sink) writers() string { return quote(s.cfg.Project, s.cfg.Dataset, writersTable) }

// Writer returns the writer recorded for the inventory in this sink's
// table and cluster. Every export reads it (sinks.Claimed), so the reads
// of a table's inventories are coalesced like their exports: one query
// answers every read waiting when it starts (readWriters).
func (s *Sink) Writer(ctx context.Context, id rows.Identity) (string, error) {
	if ok, err := s.t.ensureWriters(ctx); !ok {
		return "", err
	}
	r := &writerRead{scope: scopeKey(id.Namespace, id.Name), done: make(chan struct{})}
	s.t.mu.Lock()
	s.t.reads = append(s.t.reads, r)
	if !s.t.reading {
		s.t.reading = true
		go s.t.readWriters()
	}
	s.t.mu.Unlock()
	select {
	case <-r.done:
		return r.writer, r.err
	case <-ctx.Done():
		return "", fmt.Errorf("read the writer record: %w", ctx.Err())
	}
}

// writerRead is one inventory's read of its writer record.
type writerRead struct {
	scope  string
	done   chan struct{}
	writer string
	err    error
}

// readWriters answers the waiting writer reads, one query for all that
// wait when it starts, until none wait.
func (t *table) readWriters() {
	for {
		t.mu.Lock()
		reads := t.reads
		t.reads = nil
		if len(reads) == 0 {
			t.reading = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		scopes := make([]string, 0, len(reads))
		for _, r := range reads {
			scopes = append(scopes, r.scope)
		}
		q := t.client.Query(`SELECT t.inventory_namespace, t.inventory_name, t.writer FROM ` + quote(t.cfg.Project, t.cfg.Dataset, writersTable) + ` AS t
WHERE t.cluster = @cluster AND t.sink_table = @sink_table AND CONCAT(t.inventory_namespace, '/', t.inventory_name) IN UNNEST(@scopes)`)
		q.Parameters = []bigquery.QueryParameter{{Name: paramCluster, Value: t.cfg.Cluster}, {Name: "sink_table", Value: t.cfg.Table},
			{Name: paramScopes, Value: scopes}}
		writers := map[string]string{}
		ctx, cancel := context.WithTimeout(t.ctx, callTimeout)
		err := t.read(ctx, q, 3, func(row []bigquery.Value) error {
			w, _ := row[2].(string)
			writers[scopeKey(row[0], row[1])] = w
			return nil
		})
		cancel()
		if err != nil {
			err = fmt.Errorf("read the writer record: %w", err)
		}
		for _, r := range reads {
			r.writer, r.err = writers[r.scope], err
			close(r.done)
		}
	}
}

// SetWriter records (or, for "", removes) the inventory's writer.
func (s *Sink) SetWriter(ctx context.Context, id rows.Identity, writer string) error {
	if ok, err := s.t.ensureWriters(ctx); !ok {
		return err
	}
	sql := `DELETE FROM ` + s.writers() + ` AS t WHERE ` + writerKey
	if writer != "" {
		sql = `MERGE ` + s.writers() + ` AS t USING (SELECT 1) AS s ON ` + writerKey + `
WHEN MATCHED THEN UPDATE SET writer = @writer, updated_at = CURRENT_TIMESTAMP()
WHEN NOT MATCHED THEN INSERT (sink_table, cluster, inventory_namespace, inventory_name, writer, updated_at)
  VALUES (@sink_table, @cluster, @inventory_namespace, @inventory_name, @writer, CURRENT_TIMESTAMP())`
	}
	q := s.t.client.Query(sql)
	q.Parameters = s.writerParams(id, writer)
	job, err := s.t.start(ctx, q)
	if err == nil {
		err = s.t.wait(ctx, job, nil)
	}
	if err != nil {
		return s.classify(fmt.Sprintf("record writer %q", writer), err)
	}
	return nil
}
