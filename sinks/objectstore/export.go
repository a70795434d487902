package objectstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync/atomic"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"golang.org/x/sync/errgroup"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// journal lists every key an export may change (create, overwrite or
// delete), written before its first change and removed after its last.
// While a journal is in the bucket, the manifest does not say what those
// keys hold: the next export checks each of them (the content tag in the
// object's metadata) and rewrites or deletes it, whatever the manifest
// says. A failed export so never leaves a key the next one does not know
// of, and a key it overwrote is never trusted to hold the manifest's rows.
type journal struct {
	// Version 2 journals every change; a journal without it (version 1)
	// listed only created keys, so every object of the next export is
	// checked.
	Version int      `json:"version,omitempty"`
	Objects []string `json:"objects"`
}

const journalVersion = 2

// deleteChunk is how many deletes an export makes between two records of
// its progress in the journal.
const deleteChunk = 1000

// contentKey is the object metadata key holding the content tag: a hash of
// the settings and the rows the object holds (not of its bytes, which
// carry the export time). gocloud lower-cases metadata keys.
const contentKey = "kollect-content"

func (s *Store) contentTag(hash string) string {
	sum := sha256.Sum256([]byte(s.settings() + "\n" + hash))
	return hex.EncodeToString(sum[:16])
}

// export makes the bucket hold snap. In order: the journal naming every key
// it changes, the objects that changed (in parallel), the manifest, the
// deletes of keys no longer written (in parallel), and the journal's
// removal. An export that fails anywhere leaves the journal, so the next
// one resumes: it skips the objects already written with the right
// content, and removes every key it does not keep.
func (s *Store) export(ctx context.Context, snap *rows.Snapshot, parts []*rows.Part) (sinks.Ack, error) {
	id := snap.Inventory
	mKey, jKey := s.metaKey(id, ".json"), s.metaKey(id, ".pending.json")
	var old manifest
	hadManifest, err := s.readJSON(ctx, mKey, &old)
	if err != nil {
		return sinks.Ack{}, err
	}
	var jr journal
	hadJournal, err := s.readJSON(ctx, jKey, &jr)
	if err != nil {
		return sinks.Ack{}, err
	}
	total := 0
	if len(parts) > 1 && s.cfg.Layout == Document {
		total = len(parts)
	}
	if hadManifest && !hadJournal && old.Checksum == snap.Checksum && old.Settings == s.settings() && old.Generation == id.Generation && old.PartTotal == total {
		return sinks.Ack{Rows: len(snap.Rows), Revision: shortSum(snap.Checksum)}, nil
	}
	var objs []keyed
	if len(snap.Rows) > 0 {
		if objs, err = s.objects(snap, parts); err != nil {
			return sinks.Ack{}, sinks.Permanent(err)
		}
	}
	next := manifest{SchemaVersion: rows.SchemaVersion, Namespace: id.Namespace, Name: id.Name, Generation: id.Generation,
		Cluster: s.enc.cluster, Checksum: snap.Checksum, Settings: s.settings(), ExportedAt: s.cfg.Clock.Now().UTC(),
		ItemCount: len(snap.Rows), PartTotal: total, Objects: make(map[string]entry, len(objs))}
	for _, o := range objs {
		e := entry{Hash: o.hash, Rows: len(o.rows)}
		if o.single {
			e.Target = o.rows[0].TargetName
		}
		next.Objects[o.key] = e
	}
	if snap.Partial() {
		// The objects of kept targets, and those whose target an earlier
		// version did not record, stay as they are and in the manifest.
		next.Checksum = "" // the manifest describes more than snap
		for k, e := range old.Objects {
			if _, ok := next.Objects[k]; !ok && (e.Target == "" || snap.Keeps(e.Target)) {
				next.Objects[k] = e
				next.ItemCount += e.Rows
			}
		}
	}
	// unknown: keys whose content the manifest does not vouch for.
	unknown := make(map[string]bool, len(jr.Objects))
	for _, k := range jr.Objects {
		unknown[k] = true
	}
	checkAll := hadJournal && jr.Version < journalVersion
	var writes []keyed
	for _, o := range objs {
		if !checkAll && !unknown[o.key] && old.Settings == next.Settings && old.Objects[o.key].holds(next.Objects[o.key]) {
			continue // the bucket holds this content already
		}
		writes = append(writes, o)
	}
	var gone []string
	for _, k := range union(keys(old.Objects), jr.Objects) {
		if _, keep := next.Objects[k]; !keep {
			gone = append(gone, k)
		}
	}
	changes := make([]string, 0, len(writes)+len(gone))
	for _, o := range writes {
		changes = append(changes, o.key)
	}
	changes = union(append(changes, gone...), jr.Objects)
	if len(changes) > 0 && (!hadJournal || checkAll || len(changes) != len(jr.Objects)) {
		// Known before any of them changes, so a failure leaves no key
		// the next export does not check.
		if err := s.writeJSON(ctx, jKey, journal{Version: journalVersion, Objects: changes}); err != nil {
			return sinks.Ack{}, err
		}
	}
	ack := sinks.Ack{Rows: next.ItemCount, Changed: true, Revision: shortSum(snap.Checksum)}
	if snap.Partial() && len(changes) == 0 && !hadJournal {
		// Nothing to write: the manifest stays the one of the last
		// complete export, which still describes the bucket.
		ack.Changed = false
		return ack, nil
	}
	written, bytes, err := s.putAll(ctx, writes, unknown, checkAll)
	ack.Written, ack.Bytes = written, bytes
	if err != nil {
		return sinks.Ack{}, err
	}
	if len(next.Objects) > 0 {
		if err := s.writeJSON(ctx, mKey, next); err != nil {
			return sinks.Ack{}, err
		}
	} else {
		// An empty snapshot removes what this sink wrote for the
		// inventory, the manifest first: the journal names the rest.
		if err := s.deleteAll(ctx, []string{mKey}); err != nil {
			return sinks.Ack{}, err
		}
		ack.Changed = hadManifest || hadJournal
	}
	for _, k := range gone {
		ack.Written += old.Objects[k].Rows // a row removed is a change written
	}
	// The manifest now vouches for every object written: the journal
	// shrinks to the deletes left after each chunk, so a deletion of many
	// objects cut by a timeout resumes rather than starts again.
	for len(gone) > 0 {
		n := min(len(gone), deleteChunk)
		if err := s.deleteAll(ctx, gone[:n]); err != nil {
			return sinks.Ack{}, err
		}
		gone = gone[n:]
		if len(gone) > 0 {
			if err := s.writeJSON(ctx, jKey, journal{Version: journalVersion, Objects: gone}); err != nil {
				return sinks.Ack{}, err
			}
		}
	}
	if hadJournal || len(changes) > 0 {
		if err := s.deleteAll(ctx, []string{jKey}); err != nil {
			return sinks.Ack{}, err
		}
	}
	return ack, nil
}

// putAll writes objects, Parallel at a time. An object a failed export may
// have written (unknown, or every object when check) is read back first:
// one whose content tag matches is not written again, so a retry resumes
// where the failure stopped. It returns the rows and bytes written.
func (s *Store) putAll(ctx context.Context, objs []keyed, unknown map[string]bool, check bool) (int, int64, error) {
	var rowsWritten, bytesWritten atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Parallel)
	for _, o := range objs {
		g.Go(func() error {
			tag := s.contentTag(o.hash)
			rowsWritten.Add(int64(len(o.rows)))
			if check || unknown[o.key] {
				attrs, err := s.cfg.Bucket.Attributes(gctx, o.key)
				if err == nil && attrs.Metadata[contentKey] == tag {
					return nil // a failed export wrote it already
				}
				if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
					return fmt.Errorf("read the attributes of %s: %w", o.key, err)
				}
			}
			body, err := s.enc.encode(o.object)
			if err != nil {
				return sinks.Permanent(err)
			}
			opts := &blob.WriterOptions{ContentType: contentType(s.cfg.Format), ContentEncoding: s.enc.contentEncoding(),
				Metadata: map[string]string{contentKey: tag}}
			if err := s.put(gctx, o.key, body, opts); err != nil {
				return fmt.Errorf("write %s: %w", o.key, err)
			}
			bytesWritten.Add(int64(len(body)))
			return nil
		})
	}
	err := g.Wait()
	return int(rowsWritten.Load()), bytesWritten.Load(), err
}

// deleteAll deletes keys, Parallel at a time; a key already gone is
// deleted.
func (s *Store) deleteAll(ctx context.Context, ks []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Parallel)
	for _, k := range ks {
		g.Go(func() error {
			if err := s.cfg.Bucket.Delete(gctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
				return fmt.Errorf("delete %s: %w", k, err)
			}
			return nil
		})
	}
	return g.Wait()
}
