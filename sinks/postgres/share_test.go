//go:build integration

package postgres_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"kollect.dev/kollect/internal/servers/pgtest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/postgres"
)

// Many inventories bound to one server share one pool: forty sinks
// exporting at once hold at most the shared pool's connections, where
// pools of their own would hold up to four each (160, past the default
// max_connections of 100). The last sink closed closes the pool.
func TestSinksOfOneServerShareOnePool(t *testing.T) {
	srv := pgtest.Start(t)
	clients := &sinks.Clients{}
	const n = 40
	ss := make([]*postgres.Sink, n)
	for i := range ss {
		s, err := postgres.New(postgres.Config{DSN: srv.DSN(""), Table: "shared_items", Cluster: "c", Clients: clients})
		if err != nil {
			t.Fatal(err)
		}
		ss[i] = s
	}
	if got := clients.Open(); got != 1 {
		t.Fatalf("%d sinks of one server opened %d pools, want 1", n, got)
	}
	other, err := postgres.New(postgres.Config{DSN: srv.DSN("") + "&application_name=other", Table: "shared_items", Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	if got := clients.Open(); got != 2 {
		t.Fatalf("a sink with another DSN shares a pool: %d pools, want 2", got)
	}
	other.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	peak := 0
	done := make(chan struct{})
	go func() { // the server's connections from this database, sampled
		defer close(done)
		for ctx.Err() == nil {
			if got := query(t, srv, `SELECT count(*)::text FROM pg_stat_activity WHERE datname = 'postgres' AND pid <> pg_backend_pid()`); len(got) == 1 {
				c, _ := strconv.Atoi(got[0])
				peak = max(peak, c-1) // less the sampling connection itself
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var g errgroup.Group
	for i, s := range ss {
		g.Go(func() error {
			b := &sinktest.Binding{Backend: s}
			for round := range 3 {
				id := rows.Identity{Namespace: fmt.Sprintf("team-%02d", i), Name: "inv"}
				if _, err := b.Export(ctx, sinktest.Snap(id, sinktest.Rows(200, strconv.Itoa(round)))); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	t.Logf("%d sinks exporting at once held at most %d connections", n, peak)
	if peak > 8 || peak == 0 {
		t.Fatalf("%d sinks of one server held up to %d connections, want between 1 and the shared pool's 8", n, peak)
	}
	if got := query(t, srv, `SELECT count(*)::text FROM shared_items`); got[0] != strconv.Itoa(n*200) {
		t.Fatalf("the table holds %s rows, want %d", got[0], n*200)
	}
	for _, s := range ss[1:] {
		s.Close()
	}
	if got := clients.Open(); got != 1 {
		t.Fatalf("the pool closed while a sink still uses it (%d open)", got)
	}
	ss[0].Close()
	if got := clients.Open(); got != 0 {
		t.Fatalf("%d pools open after every sink closed", got)
	}
}
