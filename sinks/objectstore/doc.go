// Package objectstore is the snapshot backend for object stores (S3, GCS,
// Azure Blob) over gocloud.dev/blob: the bucket is opened by the caller
// with the driver and credentials of its type; this package decides what
// objects an export writes and deletes.
//
// An export writes the objects of its layout (one per inventory, one per
// source namespace, or one per row), each in the sink's format (the JSON
// envelope, NDJSON, CSV or Parquet) and compression, skipping objects whose
// content the store already holds. Then it writes a small manifest naming
// every object of the export with its content hash, and only then deletes
// the objects the previous manifest named that this export no longer
// writes. A reader that starts from the manifest never sees a half-written
// export, a restart resumes from the manifest in the bucket, and an empty
// snapshot removes what this sink wrote and nothing else.
package objectstore
