package postgres

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// writer runs one export inside a transaction.
type writer struct {
	tx       pgx.Tx
	table    string
	conflict string
	id       rows.Identity
	cluster  string
	now      time.Time
	staged   bool
}

var stagingColumns = []string{"target_name", "source_uid", "resource_namespace", "payload"}

// stage (re)fills the temporary staging table with rs through COPY.
func (w *writer) stage(ctx context.Context, rs []*rows.Row) (int64, error) {
	if !w.staged {
		if _, err := w.tx.Exec(ctx, `CREATE TEMP TABLE kollect_export_staging (
  target_name TEXT NOT NULL, source_uid TEXT NOT NULL, resource_namespace TEXT NOT NULL, payload JSONB NOT NULL
) ON COMMIT DROP`); err != nil {
			return 0, fmt.Errorf("create staging table: %w", err)
		}
		w.staged = true
	} else if _, err := w.tx.Exec(ctx, `TRUNCATE kollect_export_staging`); err != nil {
		return 0, fmt.Errorf("truncate staging table: %w", err)
	}
	var bytes int64
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i >= len(rs) {
			return nil, nil
		}
		r := rs[i]
		i++
		ns := r.Namespace
		if ns == "" {
			ns = w.id.Namespace
		}
		payload := r.JSON()
		bytes += int64(len(payload))
		return []any{r.TargetName, r.UID, ns, payload}, nil
	})
	if _, err := w.tx.CopyFrom(ctx, pgx.Identifier{"kollect_export_staging"}, stagingColumns, src); err != nil {
		return 0, fmt.Errorf("copy rows: %w", err)
	}
	// A temporary table has no statistics until analysed; without them the
	// planner joins it by nested loops, quadratic in the row count.
	if len(rs) > 100 {
		if _, err := w.tx.Exec(ctx, `ANALYZE kollect_export_staging`); err != nil {
			return 0, fmt.Errorf("analyze staging table: %w", err)
		}
	}
	return bytes, nil
}

// merge upserts the staged rows; rows whose content is unchanged are left
// alone, so an identical export writes nothing.
func (w *writer) merge(ctx context.Context) (int64, error) {
	tag, err := w.tx.Exec(ctx, `INSERT INTO `+w.table+` AS t
  (inventory_namespace, inventory_name, target_name, source_uid, cluster, resource_namespace, payload, exported_at)
SELECT $1, $2, s.target_name, s.source_uid, $3, s.resource_namespace, s.payload, $4 FROM kollect_export_staging s
ON CONFLICT (`+w.conflict+`) DO UPDATE SET payload = EXCLUDED.payload, exported_at = EXCLUDED.exported_at,
  resource_namespace = EXCLUDED.resource_namespace, cluster = EXCLUDED.cluster
WHERE t.payload IS DISTINCT FROM EXCLUDED.payload OR t.resource_namespace IS DISTINCT FROM EXCLUDED.resource_namespace
  OR t.cluster IS DISTINCT FROM EXCLUDED.cluster`, w.id.Namespace, w.id.Name, w.cluster, w.now)
	if err != nil {
		return 0, fmt.Errorf("upsert rows: %w", err)
	}
	return tag.RowsAffected(), nil
}

func (w *writer) count(ctx context.Context) (int, error) {
	var n int
	err := w.tx.QueryRow(ctx, `SELECT count(*) FROM `+w.table+` WHERE inventory_namespace = $1 AND inventory_name = $2 AND cluster = $3`,
		w.id.Namespace, w.id.Name, w.cluster).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count rows: %w", err)
	}
	return n, nil
}

// refused reports whether PostgreSQL refuses a row: jsonb cannot hold the
// NUL character (\u0000), and one such row would fail the whole COPY,
// every time. scratch holds the JSON written to look.
func refused(r *rows.Row, scratch *[]byte) bool {
	*scratch = r.AppendJSON((*scratch)[:0])
	return bytes.Contains(*scratch, []byte(`\u0000`))
}

// storable splits rows into those PostgreSQL can store and those it
// refuses, in one pass; rs itself is returned when it refuses none.
func storable(rs []*rows.Row) (ok, bad []*rows.Row) {
	var scratch []byte
	for i, r := range rs {
		switch {
		case !refused(r, &scratch):
			if bad != nil {
				ok = append(ok, r)
			}
		case bad == nil:
			ok = append(make([]*rows.Row, 0, len(rs)), rs[:i]...)
			bad = append(bad, r)
		default:
			bad = append(bad, r)
		}
	}
	if bad == nil {
		return rs, nil
	}
	return ok, bad
}

// rejections reports the rows set aside.
func rejections(bad []*rows.Row) []sinks.Rejection {
	out := make([]sinks.Rejection, 0, len(bad))
	for _, r := range bad {
		out = append(out, sinks.Rejection{Key: r.Key().String(), Reason: "a value holds a NUL character (\\u0000), which PostgreSQL jsonb cannot store"})
	}
	return out
}

// full writes every row and deletes the inventory's rows (of this
// cluster) that the snapshot does not hold. A row set aside keeps what the
// table held for it, as do the rows of the targets kept (a partial
// snapshot: targets whose rows nobody has observed since the start).
func (w *writer) full(ctx context.Context, all []*rows.Row, kept []string) (sinks.Ack, error) {
	rs, bad := storable(all)
	keepTargets, keepUIDs := make([]string, 0, len(bad)), make([]string, 0, len(bad))
	for _, r := range bad {
		keepTargets, keepUIDs = append(keepTargets, r.TargetName), append(keepUIDs, r.UID)
	}
	// The table may hold rows inserted in this very transaction, which its
	// statistics do not show; a nested-loop plan would then be quadratic.
	if _, err := w.tx.Exec(ctx, `SET LOCAL enable_nestloop = off`); err != nil {
		return sinks.Ack{}, fmt.Errorf("plan settings: %w", err)
	}
	written, err := w.stage(ctx, rs)
	if err != nil {
		return sinks.Ack{}, err
	}
	up, err := w.merge(ctx)
	if err != nil {
		return sinks.Ack{}, err
	}
	tag, err := w.tx.Exec(ctx, `DELETE FROM `+w.table+` t
WHERE t.inventory_namespace = $1 AND t.inventory_name = $2 AND t.cluster = $3
  AND NOT EXISTS (SELECT 1 FROM kollect_export_staging s WHERE s.target_name = t.target_name AND s.source_uid = t.source_uid)
  AND NOT EXISTS (SELECT 1 FROM unnest($4::text[], $5::text[]) AS k(target_name, source_uid)
                  WHERE k.target_name = t.target_name AND k.source_uid = t.source_uid)
  AND NOT (t.target_name = ANY($6::text[]))`,
		// Never nil: a nil slice is SQL NULL, and NOT (x = ANY(NULL)) is
		// NULL, which would keep every row.
		w.id.Namespace, w.id.Name, w.cluster, keepTargets, keepUIDs, append([]string{}, kept...))
	if err != nil {
		return sinks.Ack{}, fmt.Errorf("delete stale rows: %w", err)
	}
	n, err := w.count(ctx)
	if err != nil {
		return sinks.Ack{}, err
	}
	return sinks.Ack{Rows: n, Written: int(up + tag.RowsAffected()), Bytes: written, Rejected: rejections(bad)}, nil
}

// delta writes only what changed since the last acknowledged export.
func (w *writer) delta(ctx context.Context, d *rows.Delta) (sinks.Ack, error) {
	var ack sinks.Ack
	ups, bad := storable(d.Upserts)
	ack.Rejected = rejections(bad)
	if len(ups) > 0 {
		bytes, err := w.stage(ctx, ups)
		if err != nil {
			return ack, err
		}
		up, err := w.merge(ctx)
		if err != nil {
			return ack, err
		}
		ack.Bytes, ack.Written = bytes, int(up)
	}
	if len(d.Deletes) > 0 {
		targets, uids := make([]string, len(d.Deletes)), make([]string, len(d.Deletes))
		for i, r := range d.Deletes {
			targets[i], uids[i] = r.TargetName, r.UID
		}
		tag, err := w.tx.Exec(ctx, `DELETE FROM `+w.table+` t
USING unnest($4::text[], $5::text[]) AS g(target_name, source_uid)
WHERE t.inventory_namespace = $1 AND t.inventory_name = $2 AND t.cluster = $3
  AND t.target_name = g.target_name AND t.source_uid = g.source_uid`,
			w.id.Namespace, w.id.Name, w.cluster, targets, uids)
		if err != nil {
			return ack, fmt.Errorf("delete rows: %w", err)
		}
		ack.Written += int(tag.RowsAffected())
	}
	n, err := w.count(ctx)
	if err != nil {
		return ack, err
	}
	ack.Rows = n
	return ack, nil
}
