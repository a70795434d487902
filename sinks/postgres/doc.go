// Package postgres is the PostgreSQL database sink: one table row per
// inventory row, keyed by inventory, cluster, target and object UID.
//
// An export runs in one transaction: the changed rows are streamed with COPY
// into a temporary table, merged with INSERT … ON CONFLICT (rows whose
// payload is unchanged are not rewritten), and rows absent from the
// snapshot are deleted. When the sink does not know what the table holds
// (its first export, or when the row count disagrees with what it last
// wrote) it sends every row and reconciles deletions against the whole set.
//
// The package receives a DSN and TLS material as plain values; it never
// reads Secrets or imports Kubernetes clients (adapter.go alone reads the
// API types).
package postgres
