package bigquery_test

import (
	"testing"

	"kollect.dev/kollect/sinks/sinktest"
)

// BenchmarkFirstExport100k: 100,000 rows into an empty inventory (one
// load job of every row, a MERGE, a DELETE and a count) on the in-process
// fake: the sink's and the client's own cost, not BigQuery's job latency.
func BenchmarkFirstExport100k(b *testing.B) {
	srv, key := fake(b)
	sinktest.BenchFirstExport(b, newSink(b, config(srv, key, "")), 100_000)
}

// BenchmarkChanged1kOf100k: 1,000 changed rows in an inventory of 100,000
// that the sink already holds (a load of 1,000 rows, a MERGE, a count).
func BenchmarkChanged1kOf100k(b *testing.B) {
	srv, key := fake(b)
	sinktest.BenchChangedOf(b, newSink(b, config(srv, key, "")), 100_000, 1000)
}
