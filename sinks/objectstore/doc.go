// Package objectstore is the snapshot backend for object stores (S3, GCS,
// Azure Blob) over gocloud.dev/blob: the bucket is opened by the caller
// with the driver and credentials of its type; this package decides what
// objects an export writes and deletes.
//
// An export first writes a journal naming every key it will change, then
// the objects of its layout (one per inventory, one per source namespace,
// or one per row), each in the sink's format (the JSON envelope, NDJSON,
// CSV or Parquet) and compression, skipping objects whose content the
// store already holds, several at a time. Then it writes a small manifest
// naming every object of the export with its content hash, deletes the
// objects the previous manifest named that this export no longer writes,
// and removes the journal. An export that fails anywhere leaves the
// journal, and the next export trusts the manifest for no key it names: it
// reads each one's content tag (object metadata) and rewrites or deletes
// it, so no failure leaves a stale object or an orphan, and a retry
// resumes instead of starting again. An empty snapshot removes what this
// sink wrote and nothing else.
package objectstore
