// Package bigquery is the BigQuery database sink: one table row per
// inventory row, keyed by inventory, cluster, target and object UID, in a
// table partitioned by day on exported_at and clustered by cluster,
// inventory and resource namespace.
//
// The exports of every inventory this process writes into one table with
// the same credentials run together as batches (batch.go): a load job
// fills a staging table of the batch's own with each inventory's header
// (full or delta), its changed rows, the keys of its deleted ones and the
// targets it keeps; then one MERGE (insert new rows, update rows whose
// content differs), one SELECT counting per inventory what the table
// holds, what goes and what was written, and one DELETE of what goes, all
// keyed on (cluster, inventory_namespace, inventory_name, target_name,
// source_uid). Row content only ever travels in the load job: statements
// are fixed text with query parameters, and never grow with the
// inventory. When the sink does not know what the table holds (its first
// export in this process, after a failed export, or when the count
// disagrees), it stages every row and the DELETE removes the rows the
// staging table does not hold; the MERGE still rewrites only rows that
// differ, so a restart writes nothing.
//
// Statements are idempotent and need no multi-statement transaction: an
// export retried after a failure between them converges.
//
// The package receives credentials and an HTTP client as plain values; it
// never reads Secrets or imports Kubernetes clients (adapter.go alone reads
// the API types).
package bigquery
