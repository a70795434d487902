package postgres

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"kollect.dev/kollect/sinks"
)

// classify turns a driver error into a message that says what to fix, with
// credentials removed, marked permanent when retrying cannot help.
func (s *Sink) classify(op string, err error) error {
	if errors.Is(err, sinks.ErrPermanent) {
		return err
	}
	msg := redact(err.Error(), s.cfg.DSN)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && (pgErr.Code == "28P01" || pgErr.Code == "28000"):
		return sinks.Permanent(fmt.Errorf("postgres %s: authentication failed; check the user and password in the DSN Secret (%s)", op, msg))
	case errors.As(err, &pgErr) && pgErr.Code == "42501":
		return sinks.Permanent(fmt.Errorf("postgres %s: permission denied; grant the DSN's user CREATE on the schema (mode ensure) or INSERT, UPDATE, DELETE and SELECT on %s (%s)", op, s.table, msg))
	case errors.As(err, &pgErr) && pgErr.Code == "3D000":
		return sinks.Permanent(fmt.Errorf("postgres %s: the database named in the DSN does not exist (%s)", op, msg))
	case errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "42703"):
		return sinks.Permanent(fmt.Errorf("postgres %s: table %s does not have the expected columns (%s)", op, s.table, msg))
	case strings.Contains(msg, "server refused TLS") || strings.Contains(msg, "SSL is not enabled"):
		return sinks.Permanent(fmt.Errorf("postgres %s: the server does not offer TLS; use sslmode=disable in the DSN or enable TLS on the server (%s)", op, msg))
	}
	if terr := sinks.Transport("postgres", op, "the DSN's host", msg, err); terr != nil {
		return terr
	}
	return fmt.Errorf("postgres %s: %s", op, msg)
}

// isConcurrentCreate recognises the error PostgreSQL gives when two
// sessions run CREATE … IF NOT EXISTS for the same object at once (a probe
// and an export, or two operators): the loser hits the catalog's unique
// index (23505), or finds the object or its row type created (42P07,
// 42P06, 42710). Either way the object exists; the
// primary-key read that follows confirms it.
func isConcurrentCreate(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "23505" || pgErr.Code == "42P07" || pgErr.Code == "42P06" || pgErr.Code == "42710")
}

func isPermission(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// redact removes the DSN's password (and the DSN itself) from a message.
func redact(msg, dsn string) string {
	if dsn == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, dsn, "<dsn>")
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, "<redacted>")
		}
	}
	for _, f := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(f, "password="); ok && v != "" {
			msg = strings.ReplaceAll(msg, strings.Trim(v, "'"), "<redacted>")
		}
	}
	return msg
}
