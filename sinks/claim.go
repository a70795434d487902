package sinks

import (
	"context"
	"errors"
	"fmt"

	"kollect.dev/kollect/model/rows"
)

// Claims is a backend that records, for each inventory it holds rows of,
// which operator writes them: the writer, by default the UID of the
// writing cluster's kube-system namespace. Two operators that share a sink
// and an inventory name without distinct spec.cluster values would
// otherwise delete each other's rows on every full reconcile; with a
// record, the second one is refused and says so.
type Claims interface {
	// Writer returns the writer recorded for the inventory, "" for none.
	Writer(ctx context.Context, id rows.Identity) (string, error)
	// SetWriter records writer for the inventory; "" removes the record.
	SetWriter(ctx context.Context, id rows.Identity, writer string) error
}

// ClaimsOf returns the writer records of b: b itself, or what it says it
// keeps (a wrapper such as Whole); nil when it keeps none.
func ClaimsOf(b Backend) Claims {
	switch v := b.(type) {
	case Claims:
		return v
	case interface{ Claims() Claims }:
		return v.Claims()
	}
	return nil
}

// ErrForeignWriter marks an export refused because another operator
// writes the inventory's rows in the sink.
var ErrForeignWriter = errors.New("another operator writes this inventory in the sink")

// AdoptAnnotation on a sink names a foreign writer whose rows this
// operator may take over (a cluster rebuilt under a new kube-system UID).
const AdoptAnnotation = "kollect.dev/adopt-writer"

// ForeignWriter is the refusal of an export whose inventory another
// writer holds in the sink.
type ForeignWriter struct {
	Inventory    string // namespace/name
	Holder, Self string
}

func (e *ForeignWriter) Error() string {
	return fmt.Sprintf("the sink holds inventory %s written by another operator (writer %s; this operator is %s), so nothing was written: "+
		"give the two clusters distinct spec.cluster values on their sinks, or, if this cluster replaces that one, set the annotation %s: %q on the sink to take its rows over",
		e.Inventory, e.Holder, e.Self, AdoptAnnotation, e.Holder)
}

func (e *ForeignWriter) Unwrap() error { return ErrForeignWriter }

// Claimed returns b reading, before every export, the writer record c
// keeps for the inventory: one that names another writer (other than
// adopt) fails the export with *ForeignWriter before anything is written;
// none, or adopt, is replaced by writer. The read is one small request (a
// row, an object, a ref listing); every export pays it, so a writer that
// took the rows over is seen at once, not after a while. An export that
// leaves the inventory empty removes the record, so the rows' next writer
// may be anyone. An empty writer turns the check off.
//
// The result keeps b's optional capabilities (Probe, Close, WantsParts,
// KeepsTargets).
func Claimed(b Backend, c Claims, writer, adopt string) Backend {
	if writer == "" || c == nil {
		return b
	}
	return &claimed{b: b, c: c, writer: writer, adopt: adopt}
}

var (
	_ Prober     = (*claimed)(nil)
	_ Closer     = (*claimed)(nil)
	_ PartWanter = (*claimed)(nil)
	_ Keeper     = (*claimed)(nil)
)

type claimed struct {
	b             Backend
	c             Claims
	writer, adopt string
}

func (c *claimed) Export(ctx context.Context, d *rows.Delta) (Ack, error) {
	id := d.Next.Inventory
	key := id.Namespace + "/" + id.Name
	holder, err := c.c.Writer(ctx, id)
	if err != nil {
		return Ack{}, fmt.Errorf("read the writer record of inventory %s: %w", key, err)
	}
	if holder != "" && holder != c.writer && holder != c.adopt {
		return Ack{}, &ForeignWriter{Inventory: key, Holder: holder, Self: c.writer}
	}
	holds := len(d.Next.Rows) > 0 || d.Next.Partial() // kept rows are still this writer's
	if holder != c.writer && holds {
		if err := c.c.SetWriter(ctx, id, c.writer); err != nil {
			return Ack{}, fmt.Errorf("record the writer of inventory %s: %w", key, err)
		}
	}
	ack, err := c.b.Export(ctx, d)
	if err == nil && !holds && holder != "" {
		if err := c.c.SetWriter(ctx, id, ""); err != nil {
			return ack, fmt.Errorf("remove the writer record of the emptied inventory %s: %w", key, err)
		}
	}
	return ack, err
}

// Probe tests the wrapped backend's connection; a backend without a probe
// says so, as it would unwrapped.
func (c *claimed) Probe(ctx context.Context) error {
	if p, ok := c.b.(Prober); ok {
		return p.Probe(ctx)
	}
	return errors.New("this backend has no connection test")
}

// Close releases the wrapped backend's connections.
func (c *claimed) Close() {
	if cl, ok := c.b.(Closer); ok {
		cl.Close()
	}
}

// KeepsTargets asks the wrapped backend.
func (c *claimed) KeepsTargets() bool { return KeepsTargets(c.b) }

// WantsParts asks the wrapped backend; one that does not say takes parts.
func (c *claimed) WantsParts(snap *rows.Snapshot) bool { return WantsParts(c.b, snap) }
