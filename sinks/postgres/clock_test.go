//go:build integration

package postgres_test

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"kollect.dev/kollect/internal/servers/pgtest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/postgres"
)

// exported_at is the time of the sink's clock (the operator's), not the
// database's: a fake clock stamps every row it writes, and a row whose
// content is unchanged keeps the time it was written.
func TestRowsAreStampedByTheSinksClock(t *testing.T) {
	srv := pgtest.Start(t)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := testingclock.NewFakePassiveClock(at)
	s := newSink(t, postgres.Config{DSN: srv.DSN(""), Table: "stamped", Clock: clk})
	id := rows.Identity{Namespace: "team-a", Name: "inv"}
	first := sinktest.Snap(id, sinktest.Rows(2, "1"))
	if _, err := s.Export(context.Background(), rows.Diff(nil, first)); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(at.Add(time.Hour))
	if _, err := s.Export(context.Background(), rows.Diff(first, sinktest.Snap(id, sinktest.Rows(2, "1")))); err != nil {
		t.Fatal(err)
	}
	stamps := func() []string {
		return query(t, srv, `SELECT to_char(exported_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') FROM "public"."stamped" ORDER BY source_uid`)
	}
	if got := stamps(); len(got) != 2 || got[0] != "2030-01-02 03:04:05" || got[1] != got[0] {
		t.Fatalf("exported_at = %v, want both rows at the fake clock's first time", got)
	}
	if _, err := s.Export(context.Background(), rows.Diff(first, sinktest.Snap(id, sinktest.Rows(2, "2")))); err != nil {
		t.Fatal(err)
	}
	if got := stamps(); len(got) != 2 || got[0] != "2030-01-02 04:04:05" || got[1] != got[0] {
		t.Fatalf("exported_at = %v after a change, want both rows at the clock's new time", got)
	}
}
