package bigquery_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/bigquery"
)

// BenchmarkFirstExport100k: 100,000 rows into an empty inventory (one
// load job of every row, a MERGE and the stats) on the in-process
// fake: the sink's and the client's own cost, not BigQuery's job latency.
func BenchmarkFirstExport100k(b *testing.B) {
	srv, key := fake(b)
	sinktest.BenchFirstExport(b, newSink(b, config(srv, key, "")), 100_000)
}

// BenchmarkChanged1kOf100k: 1,000 changed rows in an inventory of 100,000
// that the sink already holds (a load of 1,000 rows, a MERGE, the stats).
func BenchmarkChanged1kOf100k(b *testing.B) {
	srv, key := fake(b)
	sinktest.BenchChangedOf(b, newSink(b, config(srv, key, "")), 100_000, 1000)
}

// BenchmarkThousandInventoriesOneTable: 1,000 inventories of 20 rows each
// export at once to one table through the sinks of one process (shared
// clients), the fake taking 200 ms per statement as BigQuery takes
// seconds. It reports the loads and MERGEs per round of 1,000 exports:
// batches, not one of each per inventory.
func BenchmarkThousandInventoriesOneTable(b *testing.B) {
	srv, key := fake(b)
	srv.StatementsTake(200 * time.Millisecond)
	clients := &sinks.Clients{}
	const teams = 1000
	ss := make([]*bigquery.Sink, teams)
	prev := make([]*rows.Snapshot, teams)
	for i := range ss {
		cfg := config(srv, key, "")
		cfg.Clients = clients
		ss[i] = newSink(b, cfg)
	}
	loads, merges := srv.Loads(), 0
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		var wg sync.WaitGroup
		for i, s := range ss {
			wg.Add(1)
			go func() {
				defer wg.Done()
				next := sinktest.Snap(rows.Identity{Namespace: fmt.Sprintf("team-%d", i), Name: "inv"}, sinktest.Rows(20, fmt.Sprint(n)))
				if _, err := s.Export(context.Background(), rows.Diff(prev[i], next)); err != nil {
					b.Error(err)
				}
				prev[i] = next
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	for _, st := range srv.Statements() {
		if strings.HasPrefix(st.SQL, "MERGE") {
			merges++
		}
	}
	b.ReportMetric(float64(srv.Loads()-loads)/float64(b.N), "loads/round")
	b.ReportMetric(float64(merges)/float64(b.N), "merges/round")
}
