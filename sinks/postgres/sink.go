package postgres

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"k8s.io/utils/clock"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// Config is a Postgres sink's plain configuration.
type Config struct {
	// Clock stamps what the sink writes: row and message times, commit
	// times (nil: the real clock).
	Clock clock.PassiveClock
	// DSN is a libpq connection string or URL.
	DSN string
	// Schema and Table name the table (schema default public).
	Schema, Table string
	// Cluster scopes every row this sink writes (spec.cluster).
	Cluster string
	// Existing never creates or alters the table (provisioning.mode
	// existing); the table must already exist.
	Existing bool
	// CA verifies the server certificate; InsecureSkipVerify skips it.
	CA                 []byte
	InsecureSkipVerify bool
	// Dial connects to the server; nil uses pgx's dialer. The operator
	// passes one that refuses forbidden endpoints at the address dialled;
	// a refusal it marks permanent stays permanent.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Clients, when set, shares one pool among the sinks that reach the
	// same server with the same DSN and TLS settings (sharedMaxConns
	// connections); nil gives the sink a pool of its own.
	Clients *sinks.Clients
}

// A pool of one sink holds at most ownMaxConns connections; a pool shared
// by every sink of one server, at most sharedMaxConns, and closes those
// idle for sharedIdle: a thousand inventories on one server stay within a
// default max_connections of 100.
const (
	ownMaxConns    = 4
	sharedMaxConns = 8
	sharedIdle     = time.Minute
)

// Sink writes inventories into one table.
type Sink struct {
	cfg     Config
	pool    *pgxpool.Pool
	release func() // gives the pool back (closes it when not shared)
	table   string // quoted "schema"."table"

	mu       sync.Mutex
	conflict string // the table's primary-key columns, quoted
	// writersReady is 1 once the writer table exists, -1 when the role may
	// not create it, 0 before the first try.
	writersReady int
}

// Sink is a Backend with these optional capabilities.
var (
	_ sinks.Backend = (*Sink)(nil)
	_ sinks.Prober  = (*Sink)(nil)
	_ sinks.Closer  = (*Sink)(nil)
	_ sinks.Keeper  = (*Sink)(nil)
)

// New validates cfg and prepares a connection pool; nothing is dialled
// until the first export or probe.
func New(cfg Config) (*Sink, error) {
	cfg.Clock = sinks.OrRealClock(cfg.Clock)
	if cfg.Table == "" {
		return nil, sinks.Permanent(errors.New("postgres.table is required"))
	}
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	// Checked before parsing: parsing already reads the files a DSN names.
	if err := CheckDSN(cfg.DSN); err != nil {
		return nil, sinks.Permanent(err)
	}
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, sinks.Permanent(fmt.Errorf("the postgres DSN cannot be parsed: %s", redact(err.Error(), cfg.DSN)))
	}
	pc.MaxConns = ownMaxConns
	if cfg.Clients != nil {
		pc.MaxConns, pc.MaxConnIdleTime = sharedMaxConns, sharedIdle
	}
	pc.ConnConfig.ConnectTimeout = 10 * time.Second
	if err := configureTLS(pc, cfg); err != nil {
		return nil, err
	}
	if cfg.Dial != nil {
		// The dialer resolves names itself, so what it vets is what it
		// connects to.
		pc.ConnConfig.LookupFunc = func(_ context.Context, host string) ([]string, error) { return []string{host}, nil }
		guarded := cfg.Dial
		pc.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if network == "unix" {
				return nil, sinks.Permanent(fmt.Errorf("the postgres DSN names a unix socket: a sink reaches its server over TCP only"))
			}
			return guarded(ctx, network, addr)
		}
	}
	key := strings.Join([]string{cfg.DSN, string(cfg.CA), strconv.FormatBool(cfg.InsecureSkipVerify)}, "\x00")
	v, release, err := cfg.Clients.Acquire("postgres", key, func() (any, func(), error) {
		pool, err := pgxpool.NewWithConfig(context.Background(), pc)
		if err != nil {
			return nil, nil, err
		}
		return pool, pool.Close, nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres pool: %s", redact(err.Error(), cfg.DSN))
	}
	return &Sink{cfg: cfg, pool: v.(*pgxpool.Pool), release: release, table: ident(cfg.Schema) + "." + ident(cfg.Table)}, nil
}

func configureTLS(pc *pgxpool.Config, cfg Config) error {
	if len(cfg.CA) == 0 && !cfg.InsecureSkipVerify {
		return nil // sslmode in the DSN decides
	}
	tc := pc.ConnConfig.TLSConfig
	if tc == nil {
		host := pc.ConnConfig.Host
		tc = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	if len(cfg.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CA) {
			return sinks.Permanent(errors.New("tls CA bundle holds no PEM certificate"))
		}
		tc.RootCAs = pool
	}
	tc.InsecureSkipVerify = cfg.InsecureSkipVerify
	pc.ConnConfig.TLSConfig = tc
	for _, fb := range pc.ConnConfig.Fallbacks {
		if fb.TLSConfig != nil {
			fb.TLSConfig = tc
		}
	}
	return nil
}

// KeepsTargets reports that a full export can leave kept targets' rows
// as the table holds them: every row names its target.
func (s *Sink) KeepsTargets() bool { return true }

// Close gives the connection pool back: a shared pool closes with its
// last sink.
func (s *Sink) Close() { s.release() }

// Probe connects, pings the server and checks the table is usable:
// created in mode ensure, present with a primary key in mode existing.
func (s *Sink) Probe(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return s.classify("ping", err)
	}
	_, err := s.prepare(ctx)
	return err
}

// Export makes the table hold exactly d.Next for the inventory and this
// sink's cluster, in one transaction.
func (s *Sink) Export(ctx context.Context, d *rows.Delta) (sinks.Ack, error) {
	conflict, err := s.prepare(ctx)
	if err != nil {
		return sinks.Ack{}, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return sinks.Ack{}, s.classify("begin", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // a no-op after Commit
	w := writer{tx: tx, table: s.table, conflict: conflict, id: d.Next.Inventory, cluster: s.cfg.Cluster, now: s.cfg.Clock.Now().UTC()}
	var ack sinks.Ack
	if d.Full() {
		ack, err = w.full(ctx, d.Next.Rows, d.Next.Keep)
	} else {
		ack, err = w.delta(ctx, d)
	}
	if err == nil && !d.Full() && ack.Rows != len(d.Next.Rows) && drifted(ack.Rows, d.Next.Rows) {
		// The table does not hold what this sink last wrote (someone
		// edited it): reconcile against the whole snapshot. A row set
		// aside may or may not have an older version in the table.
		var again sinks.Ack
		again, err = w.full(ctx, d.Next.Rows, d.Next.Keep)
		ack.Written += again.Written
		ack.Bytes += again.Bytes
		ack.Rows = again.Rows
	}
	if err != nil {
		return sinks.Ack{}, s.classify("export", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return sinks.Ack{}, s.classify("commit", err)
	}
	ack.Changed = ack.Written > 0
	return ack, nil
}

// drifted reports whether a table holding n rows for the inventory cannot
// be what this sink wrote for rs: every storable row, and perhaps an older
// version of each row set aside.
func drifted(n int, rs []*rows.Row) bool {
	bad := 0
	var scratch []byte
	for _, r := range rs {
		if refused(r, &scratch) {
			bad++
		}
	}
	return n > len(rs) || n < len(rs)-bad
}

// prepare provisions the table once (ensure mode) and learns its primary
// key, which is the ON CONFLICT target.
func (s *Sink) prepare(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conflict != "" {
		return s.conflict, nil
	}
	if !s.cfg.Existing {
		if _, err := s.pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident(s.cfg.Schema)); err != nil && !isPermission(err) && !isConcurrentCreate(err) {
			return "", s.classify("create schema", err)
		}
		if _, err := s.pool.Exec(ctx, createTable(s.table)); err != nil && !isConcurrentCreate(err) {
			return "", s.classify("create table", err)
		}
	}
	cols, err := primaryKey(ctx, s.pool, s.cfg.Schema, s.cfg.Table)
	if err != nil {
		return "", s.classify("read table definition", err)
	}
	if len(cols) == 0 {
		return "", sinks.Permanent(fmt.Errorf("table %s does not exist or has no primary key; provisioning.mode is existing, so create it (see the Postgres sink documentation) or use mode ensure", s.table))
	}
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = ident(c)
	}
	s.conflict = strings.Join(quoted, ", ")
	return s.conflict, nil
}

// ExpectedDDL is the table an ensure-mode sink of cfg creates.
func ExpectedDDL(cfg Config) string {
	schema := cfg.Schema
	if schema == "" {
		schema = "public"
	}
	return createTable(ident(schema) + "." + ident(cfg.Table))
}

func createTable(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (
  inventory_namespace TEXT NOT NULL,
  inventory_name      TEXT NOT NULL,
  target_name         TEXT NOT NULL,
  source_uid          TEXT NOT NULL,
  cluster             TEXT NOT NULL DEFAULT '',
  resource_namespace  TEXT NOT NULL DEFAULT '',
  payload             JSONB NOT NULL,
  exported_at         TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (inventory_namespace, inventory_name, cluster, target_name, source_uid)
)`
}

func primaryKey(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, schema, table string) ([]string, error) {
	rs, err := q.Query(ctx, `SELECT a.attname
FROM pg_index i
JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
WHERE i.indisprimary AND n.nspname = $1 AND c.relname = $2
ORDER BY k.ord`, schema, table)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rs, pgx.RowTo[string])
}

// ident quotes an SQL identifier, doubling embedded quotes.
func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
