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
