//go:build integration

package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"kollect.dev/kollect/internal/servers/pgtest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/postgres"
)

func row(t *testing.T, name, value string) *rows.Row {
	t.Helper()
	r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "ns", TargetName: "t", Version: "v1", Kind: "ConfigMap"}, Namespace: "ns", Name: name, UID: "uid-" + name}, rows.AttributesOf(map[string]any{"value": value}))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A row PostgreSQL refuses (jsonb cannot hold NUL) is set aside and
// reported; the rest of the export is written, in a delta and in a full
// reconcile, and a row that was stored before keeps its last good version.
func TestARowPostgresRefusesIsSetAsideNotTheExport(t *testing.T) {
	srv := pgtest.Start(t)
	s := newSink(t, postgres.Config{DSN: srv.DSN(""), Table: "inventory_items"})
	id := rows.Identity{Namespace: "ns", Name: "inv"}
	ctx := context.Background()
	values := func() string {
		return strings.Join(query(t, srv, `SELECT payload->>'name' || '=' || (payload->'attributes'->>'value') FROM inventory_items ORDER BY 1`), ",")
	}

	good := rows.NewSnapshot(id, []*rows.Row{row(t, "a", "1"), row(t, "b", "1")}, time.Now())
	if _, err := s.Export(ctx, rows.Diff(nil, good)); err != nil {
		t.Fatal(err)
	}
	// b gains a NUL, c is new with a NUL, a changes: a delta.
	bad := rows.NewSnapshot(id, []*rows.Row{row(t, "a", "2"), row(t, "b", "x\x00y"), row(t, "c", "\x00")}, time.Now())
	ack, err := s.Export(ctx, rows.Diff(good, bad))
	if err != nil {
		t.Fatalf("one bad row failed the whole export: %v", err)
	}
	if len(ack.Rejected) != 2 || !strings.Contains(ack.Rejected[0].Reason, "NUL") {
		t.Fatalf("want b and c set aside with the reason, got %+v", ack.Rejected)
	}
	if got := values(); got != "a=2,b=1" {
		t.Fatalf("after the delta the table holds %s, want a=2 and b's last good version", got)
	}
	// A full reconcile (a restart) sets them aside again and deletes nothing.
	ack, err = s.Export(ctx, rows.Diff(nil, bad))
	if err != nil || len(ack.Rejected) != 2 || ack.Rows != 2 {
		t.Fatalf("full reconcile: ack %+v, err %v", ack, err)
	}
	if got := values(); got != "a=2,b=1" {
		t.Fatalf("after a full reconcile the table holds %s", got)
	}
	// The next delta without changes is not mistaken for drift.
	ack, err = s.Export(ctx, rows.Diff(bad, bad))
	if err != nil || ack.Written != 0 {
		t.Fatalf("an unchanged delta wrote %d rows (%v)", ack.Written, err)
	}
}
