package objectstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"kollect.dev/kollect/internal/servers/s3test"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/objectstore"
)

func benchStore(b *testing.B, srv *s3test.Server, bucket string, cfg objectstore.Config) *objectstore.Store {
	b.Helper()
	if err := srv.CreateBucket(bucket); err != nil {
		b.Fatal(err)
	}
	c := open(b, srv, bucket, "bench")()
	cfg.Bucket, cfg.Name, cfg.Prefix, cfg.Redact = c.Bucket, c.Name, c.Prefix, c.Redact
	st, err := objectstore.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	return st
}

// BenchmarkS3Export100k: a whole inventory of 100,000 rows written to an
// S3 server in the test process, as one object, in each format (every
// iteration changes every row, so every export writes).
func BenchmarkS3Export100k(b *testing.B) {
	srv := s3test.Start(b)
	id := rows.Identity{Namespace: "bench", Name: "inv", Generation: 1}
	snaps := [2]*rows.Snapshot{sinktest.Snap(id, sinktest.Rows(100_000, "1")), sinktest.Snap(id, sinktest.Rows(100_000, "2"))}
	for _, f := range []struct{ format, compression string }{{"parquet", "zstd"}, {"parquet", "snappy"}, {"ndjson", "none"}, {"ndjson", "zstd"}, {"json", "none"}, {"csv", "gzip"}} {
		b.Run(f.format+"-"+f.compression, func(b *testing.B) {
			st := benchStore(b, srv, fmt.Sprintf("bench-%s-%s", f.format, f.compression), objectstore.Config{Format: f.format, Compression: f.compression})
			var bytes int64
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				ack, err := st.Export(context.Background(), snaps[i%2])
				if err != nil || ack.Written != 100_000 {
					b.Fatalf("ack %+v: %v", ack, err)
				}
				bytes = ack.Bytes
			}
			b.ReportMetric(float64(bytes), "object-bytes")
		})
	}
}

// BenchmarkS3PerResource1kOf100k: 1,000 rows change among 100,000 stored
// one object per row; an export writes those 1,000 objects (and the
// manifest) and nothing else.
func BenchmarkS3PerResource1kOf100k(b *testing.B) {
	srv := s3test.Start(b)
	st := benchStore(b, srv, "bench-per-row", objectstore.Config{Layout: "perResource"})
	id := rows.Identity{Namespace: "bench", Name: "inv", Generation: 1}
	base := sinktest.Rows(100_000, "1")
	if _, err := st.Export(context.Background(), sinktest.Snap(id, base)); err != nil {
		b.Fatal(err)
	}
	changed := [2][]*rows.Row{sinktest.Rows(1_000, "2"), sinktest.Rows(1_000, "3")}
	b.ReportAllocs()
	var written int
	for i := 0; b.Loop(); i++ {
		next := append(append([]*rows.Row{}, changed[i%2]...), base[1_000:]...)
		ack, err := st.Export(context.Background(), sinktest.Snap(id, next))
		if err != nil || ack.Written != 1_000 {
			b.Fatalf("ack %+v: %v", ack, err)
		}
		written = ack.Written
	}
	b.ReportMetric(float64(written), "objects-written")
}

// BenchmarkS3PerResourceFirstExport20k: the first export of an inventory
// of 20,000 rows, one object per row, then its deletion (an empty
// snapshot), on an S3 server in the test process: the two exports a fixed
// two-minute timeout once cut before they finished, since objects were
// written one at a time.
func BenchmarkS3PerResourceFirstExport20k(b *testing.B) {
	srv := s3test.Start(b)
	st := benchStore(b, srv, "bench-first-20k", objectstore.Config{Layout: "perResource"})
	id := rows.Identity{Namespace: "bench", Name: "inv", Generation: 1}
	full, empty := sinktest.Snap(id, sinktest.Rows(20_000, "1")), sinktest.Snap(id, nil)
	var first, deletion time.Duration
	for b.Loop() {
		start := time.Now()
		if ack, err := st.Export(context.Background(), full); err != nil || ack.Written != 20_000 {
			b.Fatalf("first export: ack %+v: %v", ack, err)
		}
		first += time.Since(start)
		start = time.Now()
		if ack, err := st.Export(context.Background(), empty); err != nil || ack.Written != 20_000 {
			b.Fatalf("deletion: ack %+v: %v", ack, err)
		}
		deletion += time.Since(start)
	}
	b.ReportMetric(first.Seconds()/float64(b.N), "first-export-s")
	b.ReportMetric(deletion.Seconds()/float64(b.N), "deletion-s")
}
