//go:build integration

package mongodb_test

import (
	"context"
	"testing"

	"kollect.dev/kollect/internal/servers/mongotest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/sinks/mongodb"
)

// benchSink is a sink on a fresh FerretDB whose collection exists and has
// the test server's _id index (see mongotest).
func benchSink(b *testing.B) *mongodb.Sink {
	srv := mongotest.Start(b)
	s := newSink(b, mongodb.Config{URI: srv.URI, Database: "bench", Collection: "items"})
	ctx := context.Background()
	if err := s.Probe(ctx); err != nil {
		b.Fatal(err)
	}
	if err := srv.IndexIDs(ctx, "bench", "items"); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkFirstExport100k: 100,000 rows into an empty inventory (the
// scope read, then inserts in bulk commands).
func BenchmarkFirstExport100k(b *testing.B) { sinktest.BenchFirstExport(b, benchSink(b), 100_000) }

// BenchmarkChanged1kOf100k: 1,000 changed rows in an inventory of 100,000
// that the sink already holds (1,000 ReplaceOne upserts by _id).
func BenchmarkChanged1kOf100k(b *testing.B) { sinktest.BenchChangedOf(b, benchSink(b), 100_000, 1000) }

// BenchmarkDocuments: building the documents of 1,000 rows, the sink's
// own share of an export's time.
func BenchmarkDocuments(b *testing.B) {
	rs := sinktest.Rows(1000, "1")
	for b.Loop() {
		for _, r := range rs {
			if _, err := mongodb.Payload(r.JSON()); err != nil {
				b.Fatal(err)
			}
		}
	}
}
