// Package rows is Kollect's data contract: a Row per collected object, and
// an immutable Snapshot of an inventory's rows in canonical order with the
// checksum upstream readers verify.
//
// Rows carry their canonical JSON, encoded once when the row is built, so
// that snapshots, checksums and sinks never re-serialise unchanged rows. A
// row keeps only its own part of it (what its target and kind share is its
// Origin's, written with it) and its attributes only in it: Attributes
// decodes them for the few readers that need values.
// This package is a leaf: it imports nothing of Kollect's own.
package rows
