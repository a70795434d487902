// Package mongodb is the MongoDB database sink: one document per inventory
// row in one collection, keyed by inventory, cluster, target and object
// UID.
//
// Each document's _id is derived from that key, so every write is a
// single-document operation on the _id index: changed rows are ReplaceOne
// upserts, rows that are gone are DeleteOnes, sent together in unordered
// bulk writes. Nothing depends on multi-document transactions; every write
// is idempotent, so an export retried after a partial write converges.
//
// When the sink does not know what the collection holds (its first export
// in this process, after a failed export, or when the server's counts show
// the collection is not what the sink wrote), it reconciles: it streams the
// keys and content hashes of the inventory's documents and writes only the
// documents that differ, deleting the ones the snapshot does not hold. The
// collection is never read into memory.
//
// The package receives a connection URI and TLS material as plain values;
// it never reads Secrets or imports Kubernetes clients (adapter.go alone
// reads the API types).
package mongodb
