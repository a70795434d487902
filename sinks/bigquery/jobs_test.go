package bigquery_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/sinktest"
)

// TestInventoriesOnOneTableRunTwoStatementsAtOnce: BigQuery runs two
// statements that change a table at once and refuses what queues past a
// few more. Eight inventories exporting to one table at once, through the
// sinks of one process, never have more than two running.
func TestInventoriesOnOneTableRunTwoStatementsAtOnce(t *testing.T) {
	srv, key := fake(t)
	srv.StatementsTake(50 * time.Millisecond)
	clients := &sinks.Clients{}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		cfg := config(srv, key, "")
		cfg.Clients = clients
		s := newSink(t, cfg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := rows.Identity{Namespace: fmt.Sprintf("team-%d", i), Name: "inv"}
			for v := range 3 {
				if _, err := s.Export(context.Background(), rows.Diff(nil, sinktest.Snap(id, sinktest.Rows(5, fmt.Sprint(v))))); err != nil {
					errs <- fmt.Errorf("%s: %w", id.Namespace, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := srv.MostRunning(project + "." + dataset + "." + table); got < 1 || got > 2 {
		t.Fatalf("at most %d statements changed the table at once, want 1 or 2", got)
	}
	if _, rs, _ := srv.Table(project, dataset, table); len(rs) != 8*5 {
		t.Fatalf("the table holds %d rows, want %d", len(rs), 8*5)
	}
}

// TestAJobLeftRunningIsAwaited: an export whose context ends while its
// merge runs leaves the merge running in BigQuery. The inventory's next
// export waits for it before it loads or changes anything, so no two
// statements of the inventory run at once, and it ends exact.
func TestAJobLeftRunningIsAwaited(t *testing.T) {
	srv, key := fake(t)
	s := newSink(t, config(srv, key, ""))
	id := rows.Identity{Namespace: "shop", Name: "inv"}
	if _, err := s.Export(context.Background(), rows.Diff(nil, sinktest.Snap(id, sinktest.Rows(10, "1")))); err != nil {
		t.Fatal(err)
	}
	srv.StatementsTake(400 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if _, err := s.Export(ctx, rows.Diff(nil, sinktest.Snap(id, sinktest.Rows(10, "2")))); err == nil {
		t.Fatal("the export outlived its context: the test needs it cut short while its merge runs")
	}
	last := sinktest.Snap(id, sinktest.Rows(7, "3"))
	ack, err := s.Export(context.Background(), rows.Diff(nil, last))
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.MostRunning(project + "." + dataset + "." + table); got != 1 {
		t.Fatalf("%d statements of one inventory changed the table at once, want 1", got)
	}
	if rs := scoped(t, srv, id, ""); ack.Rows != 7 || len(rs) != 7 {
		t.Fatalf("the table holds %d rows (acknowledged %d), want 7", len(rs), ack.Rows)
	}
}
