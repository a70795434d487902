package bigquery_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/bigquery"
)

// TestInventoriesOnOneTableExportInBatches: forty inventories exporting
// to one table at once, three times each, through the sinks of one
// process, share one client and run as a few batches: far fewer loads
// and statements than exports, never more than two statements changing
// the table at once, and every inventory exact.
func TestInventoriesOnOneTableExportInBatches(t *testing.T) {
	srv, key := fake(t)
	srv.StatementsTake(50 * time.Millisecond)
	clients := &sinks.Clients{}
	const teams, rounds = 40, 3
	var wg sync.WaitGroup
	errs := make(chan error, teams)
	for i := range teams {
		cfg := config(srv, key, "")
		cfg.Clients = clients
		s := newSink(t, cfg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := rows.Identity{Namespace: fmt.Sprintf("team-%d", i), Name: "inv"}
			var prev *rows.Snapshot
			for v := range rounds {
				next := sinktest.Snap(id, sinktest.Rows(5, fmt.Sprint(v)))
				if _, err := s.Export(context.Background(), rows.Diff(prev, next)); err != nil {
					errs <- fmt.Errorf("%s: %w", id.Namespace, err)
					return
				}
				prev = next
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := clients.Open(); n != 2 {
		t.Errorf("%d shared clients open, want 2 (the table's client and its statement slots)", n)
	}
	merges := 0
	for _, st := range srv.Statements() {
		if strings.HasPrefix(st.SQL, "MERGE") {
			merges++
		}
	}
	t.Logf("%d exports: %d loads, %d merges", teams*rounds, srv.Loads(), merges)
	if srv.Loads() > teams*rounds/4 || merges > teams*rounds/4 {
		t.Errorf("%d exports ran %d loads and %d merges, want at most a quarter as many: they are not batched", teams*rounds, srv.Loads(), merges)
	}
	if got := srv.MostRunning(project + "." + dataset + "." + table); got < 1 || got > 2 {
		t.Fatalf("at most %d statements changed the table at once, want 1 or 2", got)
	}
	for i := range teams {
		if rs := scoped(t, srv, rows.Identity{Namespace: fmt.Sprintf("team-%d", i), Name: "inv"}, ""); len(rs) != 5 ||
			!strings.Contains(rs[0].Values["payload"].(string), fmt.Sprintf("app:%d", rounds-1)) {
			t.Fatalf("team-%d holds %d rows (%v), want 5 of the last round", i, len(rs), rs)
		}
	}
}

// TestSinksWithOtherCredentialsNeverShareABatch: a batch runs with one
// set of credentials, so sinks that write one table with different keys
// (or transports, or for another cluster) each have their own client and
// batches; only the table's statement slots are shared.
func TestSinksWithOtherCredentialsNeverShareABatch(t *testing.T) {
	srv, key := fake(t)
	clients := &sinks.Clients{}
	other := srv.ServiceAccount(project, "team-b@fleet-analytics.iam.gserviceaccount.com")
	for _, tc := range []struct {
		what string
		edit func(*bigquery.Config)
		open int
	}{
		{"the same key", func(*bigquery.Config) {}, 2},
		{"the same key again", func(*bigquery.Config) {}, 2},
		{"another key", func(c *bigquery.Config) { c.Key = other }, 3},
		{"another transport", func(c *bigquery.Config) { c.Transport = "ca:1234" }, 4},
		{"another cluster", func(c *bigquery.Config) { c.Cluster = "west" }, 5},
	} {
		cfg := config(srv, key, "")
		cfg.Clients = clients
		tc.edit(&cfg)
		newSink(t, cfg)
		if n := clients.Open(); n != tc.open {
			t.Errorf("after a sink with %s: %d shared clients, want %d", tc.what, n, tc.open)
		}
	}
}

// TestAnExportCutShortLeavesItsBatchRunning: an export whose context ends
// while its batch's merge runs returns; the batch runs on, and the
// inventory's next export queues behind it, so no two statements of the
// inventory run at once, and it ends exact.
func TestAnExportCutShortLeavesItsBatchRunning(t *testing.T) {
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

// lostAnswer forwards every request, and for the first one matching drops
// BigQuery's answer: the request arrived, the job exists, and the sink
// sees a connection reset.
type lostAnswer struct {
	next  http.RoundTripper
	match func(*http.Request, []byte) bool
	mu    sync.Mutex
	lost  int
}

func (l *lostAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := l.next.RoundTrip(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && l.lost == 0 && l.match(r, body) {
		l.lost++
		resp.Body.Close()
		return nil, errors.New("read: connection reset by peer")
	}
	return resp, err
}

// TestAJobWhoseStartWentUnansweredIsFound: the answer to the request that
// started a merge, or a load, is lost. The sink finds the job by the id
// it chose and goes on with it: the export succeeds, and the statement ran
// once, not twice.
func TestAJobWhoseStartWentUnansweredIsFound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match func(*http.Request, []byte) bool
	}{
		{"a merge", func(r *http.Request, body []byte) bool {
			return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/jobs") && bytes.Contains(body, []byte("MERGE"))
		}},
		{"a load", func(r *http.Request, _ []byte) bool {
			return r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/upload/")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, key := fake(t)
			hc, err := sinks.HTTPClient(nil, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			lost := &lostAnswer{next: hc.Transport, match: tc.match}
			cfg := config(srv, key, "")
			cfg.HTTP = &http.Client{Transport: lost}
			s := newSink(t, cfg)
			id := rows.Identity{Namespace: "shop", Name: "inv"}
			ack, err := s.Export(context.Background(), rows.Diff(nil, sinktest.Snap(id, sinktest.Rows(10, "1"))))
			if err != nil {
				t.Fatalf("the export failed on the lost answer: %v", err)
			}
			if lost.lost != 1 {
				t.Fatalf("%d answers lost, want 1: the test no longer loses one", lost.lost)
			}
			merges := 0
			for _, st := range srv.Statements() {
				if strings.HasPrefix(strings.TrimSpace(st.SQL), "MERGE") {
					merges++
				}
			}
			if merges != 1 || ack.Rows != 10 || len(scoped(t, srv, id, "")) != 10 {
				t.Fatalf("%d merges ran, %d rows acknowledged, %d in the table; want 1, 10, 10", merges, ack.Rows, len(scoped(t, srv, id, "")))
			}
		})
	}
}

// TestWriterReadsOfManyInventoriesShareAQuery: every export reads its
// inventory's writer record (sinks.Claimed). Forty inventories reading at
// once through the sinks of one process share a few queries, not one
// each, and each still gets its own record.
func TestWriterReadsOfManyInventoriesShareAQuery(t *testing.T) {
	srv, key := fake(t)
	clients := &sinks.Clients{}
	const teams = 40
	ss := make([]*bigquery.Sink, teams)
	ctx := context.Background()
	for i := range ss {
		cfg := config(srv, key, "")
		cfg.Clients = clients
		ss[i] = newSink(t, cfg)
		if i%2 == 0 {
			if err := ss[i].SetWriter(ctx, rows.Identity{Namespace: fmt.Sprintf("team-%d", i), Name: "inv"}, fmt.Sprintf("writer-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	from := len(srv.Statements())
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := s.Writer(ctx, rows.Identity{Namespace: fmt.Sprintf("team-%d", i), Name: "inv"})
			want := ""
			if i%2 == 0 {
				want = fmt.Sprintf("writer-%d", i)
			}
			if err != nil || w != want {
				t.Errorf("team-%d: writer %q (%v), want %q", i, w, err, want)
			}
		}()
	}
	wg.Wait()
	queries := len(srv.Statements()) - from
	t.Logf("%d writer reads: %d queries", teams, queries)
	if queries < 1 || queries > teams/4 {
		t.Errorf("%d writer reads ran %d queries, want at most %d: they are not coalesced", teams, queries, teams/4)
	}
}
