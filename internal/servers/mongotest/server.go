// Package mongotest runs a MongoDB-compatible server for tests and
// benchmarks: FerretDB, embedded in the test process, on a throwaway
// PostgreSQL (pgtest) on loopback. No real mongod can be installed on the
// machines the tests run on; what FerretDB does not cover is listed in
// docs/sinks.md.
//
// Two settings of the test server are not FerretDB's defaults, both for
// FerretDB v1's way of running an update command (each write of the
// command holds a PostgreSQL connection until the command ends, and an
// _id filter is a jsonb containment that its _id index cannot serve):
// a connection pool larger than the sink's bulk batch, and, through
// IndexIDs, a GIN index on _id, as MongoDB's own _id index would serve the
// sink's writes.
package mongotest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"kollect.dev/kollect/internal/servers/pgtest"
)

// Server is a running FerretDB.
type Server struct {
	// Addr is host:port; URI the connection string without credentials.
	Addr, URI string
	pg        *pgtest.Server

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs FerretDB on a PostgreSQL of its own; both stop when the test
// ends. It never skips: a missing PostgreSQL fails with how to install it.
func Start(tb testing.TB) *Server {
	tb.Helper()
	pg := pgtest.Start(tb, "max_connections=300")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.DSN(""))
	if err != nil {
		tb.Fatalf("mongotest: %v", err)
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE ferretdb")
	conn.Close(ctx)
	if err != nil {
		tb.Fatalf("mongotest: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("mongotest: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &Server{Addr: addr, URI: "mongodb://" + addr + "/", pg: pg}
	if err := s.Restart(); err != nil {
		tb.Fatalf("mongotest: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Restart brings a stopped server back on the same port, with its data.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return nil
	}
	var (
		f   *ferretdb.FerretDB
		err error
	)
	for range 50 { // the port may linger for a moment
		f, err = ferretdb.New(&ferretdb.Config{
			Listener:      ferretdb.ListenerConfig{TCP: s.Addr},
			Handler:       "postgresql",
			PostgreSQLURL: s.pg.DSN("ferretdb") + "&pool_max_conns=250",
			Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("start FerretDB on %s: %w", s.Addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Run(ctx)
	}()
	s.cancel, s.done = cancel, done
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("FerretDB not listening on %s: %w", s.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop takes the server down (clients see connections refused); its data
// stays for Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel, s.done = nil, nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Client connects to the server; it is disconnected when the test ends.
func (s *Server) Client(tb testing.TB) *mongo.Client {
	tb.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(s.URI))
	if err != nil {
		tb.Fatalf("mongotest: %v", err)
	}
	tb.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// IndexIDs adds the GIN index on _id to the PostgreSQL table that holds a
// collection (see the package comment); the collection must exist.
func (s *Server) IndexIDs(ctx context.Context, database, collection string) error {
	conn, err := pgx.Connect(ctx, s.pg.DSN("ferretdb"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var table string
	err = conn.QueryRow(ctx, `SELECT _jsonb->>'table' FROM `+pgx.Identifier{database, "_ferretdb_database_metadata"}.Sanitize()+
		` WHERE _jsonb->>'_id' = $1`, collection).Scan(&table)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("collection %s.%s does not exist", database, collection)
	}
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+pgx.Identifier{table + "_id_gin"}.Sanitize()+` ON `+
		pgx.Identifier{database, table}.Sanitize()+` USING gin ((_jsonb->'_id'))`)
	return err
}

// Port is the server's port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}
