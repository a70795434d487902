package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// writersTable records which operator writes each inventory of each table
// (sinks.Claims), beside the rows' table in its schema: the rows' table
// keeps upstream's columns, so its readers see nothing new.
const writersTable = "kollect_writers"

var _ sinks.Claims = (*Sink)(nil)

func (s *Sink) writers() string { return ident(s.cfg.Schema) + "." + ident(writersTable) }

// ensureWriters provisions the rows' table and creates the writer table
// once. A role that may not create
// it (a locked-down schema in mode existing) runs without writer records:
// ok is false, and the sink exports as before.
func (s *Sink) ensureWriters(ctx context.Context) (ok bool, err error) {
	if _, err := s.prepare(ctx); err != nil { // the schema first
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writersReady != 0 {
		return s.writersReady > 0, nil
	}
	_, err = s.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.writers()+` (
  sink_table text NOT NULL,
  cluster text NOT NULL,
  inventory_namespace text NOT NULL,
  inventory_name text NOT NULL,
  writer text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (sink_table, cluster, inventory_namespace, inventory_name))`)
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		s.writersReady = 1
	case errors.As(err, &pgErr) && pgErr.Code == "42501": // insufficient_privilege
		s.writersReady = -1
		return false, nil
	default:
		return false, s.classify("create the writer table", err)
	}
	return true, nil
}

// Writer returns the writer recorded for the inventory in this sink's
// table and cluster.
func (s *Sink) Writer(ctx context.Context, id rows.Identity) (string, error) {
	if ok, err := s.ensureWriters(ctx); !ok {
		return "", err
	}
	var w string
	err := s.pool.QueryRow(ctx, `SELECT writer FROM `+s.writers()+
		` WHERE sink_table = $1 AND cluster = $2 AND inventory_namespace = $3 AND inventory_name = $4`,
		s.cfg.Table, s.cfg.Cluster, id.Namespace, id.Name).Scan(&w)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", s.classify("read the writer record", err)
	}
	return w, nil
}

// SetWriter records (or, for "", removes) the inventory's writer.
func (s *Sink) SetWriter(ctx context.Context, id rows.Identity, writer string) error {
	if ok, err := s.ensureWriters(ctx); !ok {
		return err
	}
	var err error
	if writer == "" {
		_, err = s.pool.Exec(ctx, `DELETE FROM `+s.writers()+
			` WHERE sink_table = $1 AND cluster = $2 AND inventory_namespace = $3 AND inventory_name = $4`,
			s.cfg.Table, s.cfg.Cluster, id.Namespace, id.Name)
	} else {
		_, err = s.pool.Exec(ctx, `INSERT INTO `+s.writers()+
			` (sink_table, cluster, inventory_namespace, inventory_name, writer) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (sink_table, cluster, inventory_namespace, inventory_name) DO UPDATE SET writer = EXCLUDED.writer, updated_at = now()`,
			s.cfg.Table, s.cfg.Cluster, id.Namespace, id.Name, writer)
	}
	if err != nil {
		return s.classify(fmt.Sprintf("record writer %q", writer), err)
	}
	return nil
}
