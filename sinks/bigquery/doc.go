// Package bigquery is the BigQuery database sink: one table row per
// inventory row, keyed by inventory, cluster, target and object UID, in a
// table partitioned by day on exported_at and clustered by cluster,
// inventory and resource namespace (SEMANTICS §11.8).
//
// An export stages only what changed (the changed rows and the keys of
// the deleted ones) with a load job from an in-memory NDJSON source into a
// staging table of its own, then runs one MERGE (insert new rows, update
// rows whose content differs) and one DELETE keyed on (inventory_namespace,
// inventory_name, cluster, target_name, source_uid), then counts what the
// table holds for the inventory. Row content only ever travels in the load
// job: statements are fixed text with query parameters, and never grow
// with the inventory. When the sink does not know what the table holds
// (its first export in this process, after a failed export, or when the
// count disagrees), it stages every row and the DELETE removes the rows
// the staging table does not hold; the MERGE still rewrites only rows that
// differ, so a restart writes nothing.
//
// Statements are idempotent and need no multi-statement transaction: an
// export retried after a failure between them converges.
//
// The package receives credentials and an HTTP client as plain values; it
// never reads Secrets or imports Kubernetes clients (adapter.go alone reads
// the API types).
package bigquery
