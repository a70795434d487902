//go:build integration

package postgres_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"kollect.dev/kollect/internal/servers/pgtest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/postgres"
)

func exec(t *testing.T, srv *pgtest.Server, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

// TestErrorsSayWhatToFix: each failure class is a clear, credential-free
// message; configuration problems are permanent, network ones transient.
func TestErrorsSayWhatToFix(t *testing.T) {
	srv := pgtest.Start(t)
	exec(t, srv, `CREATE ROLE reader LOGIN PASSWORD 'reader-secret'; CREATE SCHEMA locked`)
	port := strconv.Itoa(srv.Port)
	snap := sinktest.Snap(rows.Identity{Namespace: "default", Name: "inv"}, sinktest.Rows(3, "1"))
	for _, tc := range []struct {
		name      string
		cfg       postgres.Config
		permanent bool
		want      string
		secret    string
	}{
		{name: "wrong password", cfg: postgres.Config{DSN: "postgres://postgres:not-the-password@127.0.0.1:" + port + "/postgres?sslmode=disable", Table: "t"},
			permanent: true, want: "authentication failed", secret: "not-the-password"},
		{name: "unknown database", cfg: postgres.Config{DSN: srv.DSN("nope"), Table: "t"}, permanent: true, want: "database named in the DSN does not exist"},
		{name: "no privilege to create the table", cfg: postgres.Config{DSN: "postgres://reader:reader-secret@127.0.0.1:" + port + "/postgres?sslmode=disable",
			Schema: "locked", Table: "t"}, permanent: true, want: "permission denied", secret: "reader-secret"},
		{name: "existing mode without the table", cfg: postgres.Config{DSN: srv.DSN(""), Table: "absent", Existing: true},
			permanent: true, want: `"public"."absent" does not exist`},
		{name: "host that does not resolve", cfg: postgres.Config{DSN: "postgres://u:dns-secret@no-such-host.invalid:5432/db", Table: "t"},
			want: "does not resolve", secret: "dns-secret"},
		{name: "server that is not there", cfg: postgres.Config{DSN: "postgres://u:p@127.0.0.1:1/db?connect_timeout=2", Table: "t"}, want: "postgres"},
		{name: "TLS required but not offered", cfg: postgres.Config{DSN: strings.Replace(srv.DSN(""), "sslmode=disable", "sslmode=require", 1), Table: "t"},
			permanent: true, want: "does not offer TLS"},
		{name: "endpoint guard", cfg: postgres.Config{DSN: srv.DSN(""), Table: "t", Dial: func(context.Context, string, string) (net.Conn, error) {
			return nil, sinks.Permanent(errors.New("loopback addresses are not allowed as sink endpoints"))
		}}, permanent: true, want: "not allowed as sink endpoints"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := postgres.New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err = s.Export(ctx, rows.Diff(nil, snap))
			if err == nil {
				t.Fatal("export succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) || errors.Is(err, sinks.ErrPermanent) != tc.permanent {
				t.Fatalf("error %q (permanent %v), want %q (permanent %v)", err, errors.Is(err, sinks.ErrPermanent), tc.want, tc.permanent)
			}
			if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
				t.Fatalf("error leaks the password: %v", err)
			}
			if perr := s.Probe(ctx); perr == nil {
				t.Fatal("probe succeeded where export fails")
			}
		})
	}
}

// TestExistingUpstreamTableIsUsedAsIs: mode existing writes into a table
// created with upstream's DDL (primary key without cluster), using its own
// key as the conflict target.
func TestExistingUpstreamTableIsUsedAsIs(t *testing.T) {
	srv := pgtest.Start(t)
	exec(t, srv, `CREATE TABLE legacy (
  inventory_namespace TEXT NOT NULL, inventory_name TEXT NOT NULL, target_name TEXT NOT NULL, source_uid TEXT NOT NULL,
  cluster TEXT NOT NULL DEFAULT '', resource_namespace TEXT NOT NULL DEFAULT '', payload JSONB NOT NULL,
  exported_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (inventory_namespace, inventory_name, target_name, source_uid))`)
	s, err := postgres.New(postgres.Config{DSN: srv.DSN(""), Table: "legacy", Existing: true, Cluster: "east"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := &sinktest.Binding{Backend: s}
	id := rows.Identity{Namespace: "default", Name: "inv"}
	for _, rs := range [][]*rows.Row{sinktest.Rows(40, "1"), sinktest.Rows(40, "2")[:30]} {
		ack, err := b.Export(context.Background(), sinktest.Snap(id, rs))
		if err != nil || ack.Rows != len(rs) {
			t.Fatalf("export: %d rows, %v", ack.Rows, err)
		}
	}
	if got := query(t, srv, `SELECT count(*)::text FROM legacy WHERE payload->'attributes'->>'image' = 'registry.example/app:2'`); got[0] != "30" {
		t.Fatalf("legacy table holds %s current rows, want 30", got[0])
	}
}

// TestDriftedTableIsReconciled: rows removed or edited behind the sink's
// back are put right by the next export, even one that changes nothing.
func TestDriftedTableIsReconciled(t *testing.T) {
	srv := pgtest.Start(t)
	s, err := postgres.New(postgres.Config{DSN: srv.DSN(""), Table: "items"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := &sinktest.Binding{Backend: s}
	id := rows.Identity{Namespace: "default", Name: "inv"}
	rs := sinktest.Rows(40, "1")
	if _, err := b.Export(context.Background(), sinktest.Snap(id, rs)); err != nil {
		t.Fatal(err)
	}
	exec(t, srv, `DELETE FROM items WHERE source_uid IN ('uid-0001', 'uid-0002')`)
	ack, err := b.Export(context.Background(), sinktest.Snap(id, rs)) // a heartbeat: nothing changed
	if err != nil || ack.Rows != 40 || ack.Written != 2 {
		t.Fatalf("heartbeat after drift: rows %d written %d err %v; want 40 rows, 2 restored", ack.Rows, ack.Written, err)
	}
}

// TestSinksCreatingOneTableAtOnceAllSucceed: several sinks (a probe and an
// export, or two operators) create the same schema and table at the same
// moment; PostgreSQL lets only one win the catalog, and the others must
// take the table it made instead of failing.
func TestSinksCreatingOneTableAtOnceAllSucceed(t *testing.T) {
	srv := pgtest.Start(t)
	for round := 0; round < 5; round++ {
		schema := "race" + strconv.Itoa(round)
		errs := make(chan error, 6)
		for i := 0; i < cap(errs); i++ {
			go func(i int) {
				s, err := postgres.New(postgres.Config{DSN: srv.DSN(""), Schema: schema, Table: "items"})
				if err != nil {
					errs <- err
					return
				}
				defer s.Close()
				id := rows.Identity{Namespace: "ns", Name: "inv" + strconv.Itoa(i)}
				_, err = s.Export(context.Background(), rows.Diff(nil, sinktest.Snap(id, sinktest.Rows(1, "1"))))
				errs <- err
			}(i)
		}
		for i := 0; i < cap(errs); i++ {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}
