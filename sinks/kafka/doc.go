// Package kafka is the Kafka event sink: one record per row change, keyed
// by the row's stable key so a compacted topic keeps the latest row, and a
// tombstone (null value) when a row is deleted. The producer is idempotent
// with acks from all in-sync replicas; a change counts as exported only
// once the brokers acknowledged it.
//
// The package receives plain configuration and credentials; adapter.go
// alone reads the API types.
package kafka
