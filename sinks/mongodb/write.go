package mongodb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"golang.org/x/sync/errgroup"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// errDrift: the server's acknowledgements show the collection does not
// hold what this sink last wrote.
var errDrift = errors.New("the collection does not hold what this sink wrote")

// writer runs one export of one scope.
type writer struct {
	s   *Sink
	sc  scope
	now time.Time
}

// op is one write of an export and the row it is for (nil for a delete).
type op struct {
	model mongo.WriteModel
	row   *rows.Row
	// existed: the collection holds a document for the key (a replace of
	// it keeps the old one when the server refuses the new).
	existed bool
	expect  expectation // what a delta's write should do, for its check
}

// outcome is what the server acknowledged for a list of ops.
type outcome struct {
	inserted, matched, upserted, deleted, modified int
	bytes                                          int64
	refused                                        []refusal
}

type refusal struct {
	op     op
	reason string
}

func (o outcome) written() int { return o.inserted + o.upserted + o.modified + o.deleted }

// clear deletes every document of the scope: the snapshot is empty.
func (w *writer) clear(ctx context.Context) (sinks.Ack, *held, error) {
	res, err := w.s.coll.DeleteMany(ctx, w.sc.filter())
	if err != nil {
		return sinks.Ack{}, nil, fmt.Errorf("delete the inventory's documents: %w", err)
	}
	return sinks.Ack{Written: int(res.DeletedCount)}, &held{}, nil
}

// replace is the upsert of r's document under its _id; a row whose
// document cannot be built is refused before anything is sent.
func (w *writer) replace(r *rows.Row, existed bool) (op, error) {
	doc, err := w.sc.document(r, w.now)
	if err != nil {
		return op{row: r, existed: existed}, err
	}
	m := mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: fieldID, Value: doc[0].Value}}).SetReplacement(doc).SetUpsert(true)
	return op{model: m, row: r, existed: existed}, nil
}

func (w *writer) insert(r *rows.Row) (op, error) {
	doc, err := w.sc.document(r, w.now)
	if err != nil {
		return op{row: r}, err
	}
	return op{model: mongo.NewInsertOneModel().SetDocument(doc), row: r}, nil
}

func deleteOp(id string) op {
	return op{model: mongo.NewDeleteOneModel().SetFilter(bson.D{{Key: fieldID, Value: id}})}
}

// expectation is what a write of a delta should do to the collection,
// as far as the sink knows it.
type expectation uint8

const (
	expectMatch  expectation = iota // replace a document
	expectUpsert                    // create a document
	expectDelete                    // delete a document
	maybeUpsert                     // a row set aside: an older document may exist
	maybeDelete                     // likewise, for a delete
)

// delta writes what changed since the last acknowledged export, and
// checks the server's counts against what the sink knows the collection
// holds.
func (w *writer) delta(ctx context.Context, d *rows.Delta, h *held) (sinks.Ack, *held, error) {
	var (
		ops []op
		pre []refusal
	)
	for i, r := range d.Upserts {
		was := d.Replaced[i] != nil
		o, err := w.replace(r, was)
		if err != nil {
			pre = append(pre, refusal{op: o, reason: err.Error()})
			continue
		}
		switch {
		case h.aside[pair{r.TargetName, r.UID}]:
			o.expect = maybeUpsert
		case was:
			o.expect = expectMatch
		default:
			o.expect = expectUpsert
		}
		ops = append(ops, o)
	}
	for _, r := range d.Deletes {
		o := deleteOp(w.sc.id(r.TargetName, r.UID))
		o.expect = expectDelete
		if h.aside[pair{r.TargetName, r.UID}] {
			o.expect = maybeDelete
		}
		ops = append(ops, o)
	}
	out, err := w.write(ctx, ops)
	if err != nil {
		return sinks.Ack{}, nil, err
	}
	ack := sinks.Ack{Written: out.written(), Bytes: out.bytes}
	// Every write the server accepted either matched or created a
	// document; the counts say which, and must agree with what the sink
	// knows the collection holds.
	var n [5]int
	for _, o := range ops {
		n[o.expect]++
	}
	for _, r := range out.refused {
		n[r.op.expect]--
	}
	if out.upserted < n[expectUpsert] || out.upserted > n[expectUpsert]+n[maybeUpsert] ||
		out.deleted < n[expectDelete] || out.deleted > n[expectDelete]+n[maybeDelete] {
		return ack, nil, errDrift
	}
	out.refused = append(pre, out.refused...)
	ack.Rejected = rejections(out.refused)
	return ack, &held{count: h.count + out.upserted - out.deleted, aside: asideAfter(h.aside, d, out.refused)}, nil
}

// asideAfter is the set of rows set aside after a delta: the previous set,
// less the rows written or deleted, plus the rows refused now.
func asideAfter(prev map[pair]bool, d *rows.Delta, refused []refusal) map[pair]bool {
	if len(prev) == 0 && len(refused) == 0 {
		return nil
	}
	out := make(map[pair]bool, len(prev)+len(refused))
	for k := range prev {
		out[k] = true
	}
	for _, r := range d.Upserts {
		delete(out, pair{r.TargetName, r.UID})
	}
	for _, r := range d.Deletes {
		delete(out, pair{r.TargetName, r.UID})
	}
	for _, r := range refused {
		if r.op.row != nil {
			out[pair{r.op.row.TargetName, r.op.row.UID}] = true
		}
	}
	return out
}

// stored is what a reconciliation reads of each document.
type stored struct {
	ID     string `bson:"_id"`
	Target string `bson:"target_name"`
	UID    string `bson:"source_uid"`
	Hash   string `bson:"payload_sha256"`
}

// reconcile makes the scope hold exactly rs without knowing what it held:
// it streams the keys and content hashes of the scope's documents, then
// inserts the missing rows, replaces the changed ones and deletes the
// documents rs does not hold, but those of the targets snap keeps (a
// partial snapshot), which stay as they are. Only those writes are sent.
func (w *writer) reconcile(ctx context.Context, rs []*rows.Row, snap *rows.Snapshot) (sinks.Ack, *held, error) {
	index := make(map[pair]int, len(rs))
	for i, r := range rs {
		index[pair{r.TargetName, r.UID}] = i
	}
	const (
		unseen = iota
		same
		differs
	)
	state := make([]uint8, len(rs))
	var (
		stale []string
		kept  int // documents that stay as they are
	)
	cur, err := w.s.coll.Find(ctx, w.sc.filter(), options.Find().
		SetProjection(bson.D{{Key: fieldID, Value: 1}, {Key: fieldTarget, Value: 1}, {Key: fieldUID, Value: 1}, {Key: fieldHash, Value: 1}}).
		SetBatchSize(1000))
	if err != nil {
		return sinks.Ack{}, nil, fmt.Errorf("read the inventory's documents: %w", err)
	}
	for cur.Next(ctx) {
		var doc stored
		if err := cur.Decode(&doc); err != nil {
			_ = cur.Close(ctx)
			return sinks.Ack{}, nil, fmt.Errorf("read a document: %w", err)
		}
		i, ok := index[pair{doc.Target, doc.UID}]
		switch {
		case !ok && snap.Keeps(doc.Target):
			kept++ // a kept target's document, as it is
		case !ok || state[i] != unseen || doc.ID != w.sc.id(doc.Target, doc.UID):
			// Not in the snapshot, a second document for one row, or a
			// document this sink did not write under its _id.
			stale = append(stale, doc.ID)
		case doc.Hash == rs[i].Sum():
			state[i] = same
		default:
			state[i] = differs
		}
	}
	if err := cur.Err(); err != nil {
		_ = cur.Close(ctx)
		return sinks.Ack{}, nil, fmt.Errorf("read the inventory's documents: %w", err)
	}
	_ = cur.Close(ctx)

	var (
		ops []op
		pre []refusal
	)
	for i, r := range rs {
		var (
			o   op
			err error
		)
		switch state[i] {
		case same:
			kept++
			continue
		case differs:
			o, err = w.replace(r, true)
		default:
			o, err = w.insert(r)
		}
		if err != nil {
			pre = append(pre, refusal{op: o, reason: err.Error()})
			continue
		}
		ops = append(ops, o)
	}
	for _, id := range stale {
		ops = append(ops, deleteOp(id))
	}
	out, err := w.write(ctx, ops)
	if err != nil {
		return sinks.Ack{}, nil, err
	}
	out.refused = append(pre, out.refused...)
	next := &held{count: kept + out.inserted + out.upserted + out.matched}
	for _, r := range out.refused {
		if r.op.row == nil {
			continue
		}
		if r.op.existed {
			next.count++ // the older version stays
		}
		if next.aside == nil {
			next.aside = map[pair]bool{}
		}
		next.aside[pair{r.op.row.TargetName, r.op.row.UID}] = true
	}
	return sinks.Ack{Written: out.written(), Bytes: out.bytes, Rejected: rejections(out.refused)}, next, nil
}

// inFlight bounds the bulk commands of one export sent at once.
const inFlight = 4

// write sends ops in unordered bulk commands of at most Batch writes,
// several at once (their writes touch distinct documents). A document the
// server refuses is reported, not fatal; any other error ends the export.
func (w *writer) write(ctx context.Context, ops []op) (outcome, error) {
	var (
		mu   sync.Mutex
		out  outcome
		errs []error
	)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	batch := w.s.cfg.Batch
	for start := 0; start < len(ops); start += batch {
		chunk := ops[start:min(start+batch, len(ops))]
		g.Go(func() error {
			part, err := w.bulk(ctx, chunk)
			mu.Lock()
			defer mu.Unlock()
			out.add(part)
			if err != nil {
				errs = append(errs, err)
			}
			return err
		})
	}
	_ = g.Wait()
	if len(errs) > 0 {
		return out, errs[0]
	}
	return out, nil
}

// bulk sends one unordered bulk command.
func (w *writer) bulk(ctx context.Context, chunk []op) (outcome, error) {
	var out outcome
	models := make([]mongo.WriteModel, len(chunk))
	for i, o := range chunk {
		models[i] = o.model
		if o.row != nil {
			out.bytes += int64(o.row.Size())
		}
	}
	res, err := w.s.coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	if res != nil {
		out.inserted, out.matched, out.upserted = int(res.InsertedCount), int(res.MatchedCount), int(res.UpsertedCount)
		out.deleted, out.modified = int(res.DeletedCount), int(res.ModifiedCount)
	}
	if err == nil {
		return out, nil
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
		return out, fmt.Errorf("bulk write: %w", err)
	}
	for _, we := range bwe.WriteErrors {
		if we.Index < 0 || we.Index >= len(chunk) || chunk[we.Index].row == nil || !refusesDocument(we.Code) {
			return out, fmt.Errorf("bulk write: %w", err)
		}
		out.refused = append(out.refused, refusal{op: chunk[we.Index], reason: "the server refused the document: " + we.Message})
	}
	return out, nil
}

func (o *outcome) add(p outcome) {
	o.inserted += p.inserted
	o.matched += p.matched
	o.upserted += p.upserted
	o.deleted += p.deleted
	o.modified += p.modified
	o.bytes += p.bytes
	o.refused = append(o.refused, p.refused...)
}

// rejections reports the rows set aside.
func rejections(rs []refusal) []sinks.Rejection {
	out := make([]sinks.Rejection, 0, len(rs))
	for _, r := range rs {
		out = append(out, sinks.Rejection{Key: r.op.row.Key().String(), Reason: r.reason})
	}
	return out
}
