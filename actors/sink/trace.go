package sink

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"kollect.dev/kollect/actors"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// tracedExport computes the delta and runs the backend inside the export
// spans: kollect.export (linked to the collect spans of the changes it
// ships) and its child kollect.sink.write.
func tracedExport(ctx context.Context, cfg Config, links []trace.Link, backend sinks.Backend, acked, snap *rows.Snapshot, export string) (sinks.Ack, error) {
	tracer := actors.Tracer()
	ctx, span := tracer.Start(ctx, "kollect.export", trace.WithLinks(links...), trace.WithAttributes(
		attribute.String(actors.AttrInventory, cfg.Inventory), attribute.String(actors.AttrBinding, cfg.Key),
		attribute.String(actors.AttrSinkType, cfg.Type), attribute.Int("kollect.rows", len(snap.Rows))))
	defer span.End()
	d := rows.Diff(acked, snap)
	d.Export = export
	aside, err := ceiling(cfg, d)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return sinks.Ack{}, err
	}
	span.SetAttributes(attribute.Int("kollect.parts", max(len(d.Parts), 1)))
	span.SetAttributes(attribute.Int("kollect.rows.upserted", len(d.Upserts)), attribute.Int("kollect.rows.deleted", len(d.Deletes)),
		attribute.Bool("kollect.delta.full", d.Full()))
	ctx, write := tracer.Start(ctx, "kollect.sink.write", trace.WithAttributes(attribute.String(actors.AttrSinkType, cfg.Type)))
	ack, err := safeExport(ctx, backend, d)
	if err == nil && len(aside) > 0 {
		ack.Rejected = append(aside, ack.Rejected...)
	}
	write.SetAttributes(attribute.Int("kollect.written", ack.Written), attribute.Int64("kollect.bytes", ack.Bytes))
	if err != nil {
		write.RecordError(err)
		write.SetStatus(codes.Error, err.Error())
		span.SetStatus(codes.Error, "sink write failed")
	}
	write.End()
	return ack, err
}

// ceiling applies the binding's size ceiling. A row whose envelope alone
// exceeds it is set aside, as a backend's row-level refusals are: the
// export carries the others, and the row is reported rejected (and tried
// again when it changes). So one tenant's oversized object holds only
// itself, never the rows beside it in a shared sink. A snapshot binding
// checks every row of the state its backend writes, other bindings only
// the rows they will write; then a snapshot binding's export is split
// into parts when its backend writes parts.
func ceiling(cfg Config, d *rows.Delta) ([]sinks.Rejection, error) {
	if cfg.MaxBytes <= 0 {
		return nil, nil
	}
	written := d.Upserts
	if cfg.Partitioned {
		written = d.Next.Rows
	}
	aside := setAside(d, d.Next.Oversized(written, cfg.MaxBytes))
	if cfg.Partitioned && sinks.WantsParts(cfg.Backend, d.Next) {
		var err error
		if d.Parts, err = rows.Partition(d.Next, cfg.MaxBytes); err != nil {
			return nil, sinks.Permanent(err)
		}
	}
	return aside, nil
}

// setAside removes the oversized rows from what the backend receives, in
// every family alike: the next state leaves them out, and a version the
// sink held before is deleted with the export. So a set-aside row is
// absent from every sink until it fits, and a restart's full reconcile
// finds nothing to change.
func setAside(d *rows.Delta, big []*rows.ItemTooLargeError) []sinks.Rejection {
	if len(big) == 0 {
		return nil
	}
	drop := make(map[rows.Key]bool, len(big))
	aside := make([]sinks.Rejection, 0, len(big))
	for _, e := range big {
		drop[e.Key] = true
		aside = append(aside, sinks.Rejection{Key: e.Key.String(), Reason: e.Error()})
	}
	d.Next = d.Next.Without(drop)
	upserts, replaced := d.Upserts[:0:0], d.Replaced[:0:0]
	for i, r := range d.Upserts {
		var old *rows.Row
		if i < len(d.Replaced) {
			old = d.Replaced[i]
		}
		switch {
		case !drop[r.Key()]:
			upserts, replaced = append(upserts, r), append(replaced, old)
		case old != nil:
			d.Deletes = append(d.Deletes, old)
		}
	}
	if len(d.Replaced) == 0 {
		replaced = nil
	}
	d.Upserts, d.Replaced = upserts, replaced
	return aside
}

// safeExport turns a backend panic into an export error: a bug in one
// backend must not take the operator down.
func safeExport(ctx context.Context, b sinks.Backend, d *rows.Delta) (ack sinks.Ack, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sink backend panicked: %v", p)
		}
	}()
	return b.Export(ctx, d)
}
