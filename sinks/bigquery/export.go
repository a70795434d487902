package bigquery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// Export makes the table hold exactly d.Next for the inventory and this
// sink's cluster. The export joins the table's next batch (batch.go).
func (s *Sink) Export(ctx context.Context, d *rows.Delta) (sinks.Ack, error) {
	full := d.Full() || len(d.Next.Rows) == 0
	r, err := stage(d, full)
	if err != nil {
		return sinks.Ack{}, err
	}
	res, err := s.t.submit(ctx, r)
	if err != nil {
		return sinks.Ack{}, fmt.Errorf("export: %w", err)
	}
	ack := sinks.Ack{Rows: res.rows, Written: res.written, Bytes: int64(len(r.part))}
	if !full && ack.Rows != len(d.Next.Rows) {
		// The table does not hold what this sink last wrote (someone
		// edited it): reconcile against the whole snapshot.
		if r, err = stage(d, true); err != nil {
			return sinks.Ack{}, err
		}
		if res, err = s.t.submit(ctx, r); err != nil {
			return sinks.Ack{}, fmt.Errorf("export: %w", err)
		}
		ack.Rows, ack.Written, ack.Bytes = res.rows, ack.Written+res.written, ack.Bytes+int64(len(r.part))
	}
	ack.Changed = ack.Written > 0
	return ack, nil
}

// staged is one line of the staging NDJSON.
type staged struct {
	Op                string  `json:"op"`
	Namespace         string  `json:"inventory_namespace"`
	Name              string  `json:"inventory_name"`
	TargetName        string  `json:"target_name,omitempty"`
	SourceUID         string  `json:"source_uid,omitempty"`
	ResourceNamespace *string `json:"resource_namespace,omitempty"`
	Payload           *string `json:"payload,omitempty"`
}

// stage encodes an export's staged rows: its header, then every row of
// the snapshot (full) or what changed, then the targets whose rows a
// partial snapshot keeps as the table holds them.
func stage(d *rows.Delta, full bool) (*request, error) {
	id := d.Next.Inventory
	r := &request{ns: id.Namespace, name: id.Name, full: full}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	line := func(v staged) error {
		v.Namespace, v.Name = id.Namespace, id.Name
		return enc.Encode(v)
	}
	op, upserts, deletes := opDelta, d.Upserts, d.Deletes
	if full {
		op, upserts, deletes = opFull, d.Next.Rows, nil
	}
	if err := line(staged{Op: op}); err != nil {
		return nil, fmt.Errorf("stage the header of %s/%s: %w", id.Namespace, id.Name, err)
	}
	for _, row := range upserts {
		ns := row.Namespace
		if ns == "" {
			ns = id.Namespace
		}
		payload := string(row.JSON())
		if err := line(staged{Op: opUpsert, TargetName: row.TargetName, SourceUID: row.UID, ResourceNamespace: &ns, Payload: &payload}); err != nil {
			return nil, fmt.Errorf("stage row %s: %w", row.Key(), err)
		}
	}
	for _, row := range deletes {
		if err := line(staged{Op: opDelete, TargetName: row.TargetName, SourceUID: row.UID}); err != nil {
			return nil, fmt.Errorf("stage key %s: %w", row.Key(), err)
		}
	}
	if full {
		for _, target := range d.Next.Keep {
			if err := line(staged{Op: opKeep, TargetName: target}); err != nil {
				return nil, fmt.Errorf("stage kept target %s: %w", target, err)
			}
		}
	}
	r.part, r.upserts, r.deletes = buf.Bytes(), len(upserts), len(deletes)
	return r, nil
}
