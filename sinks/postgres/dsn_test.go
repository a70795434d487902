package postgres

import (
	"strings"
	"testing"
)

func TestCheckDSN(t *testing.T) {
	for _, tc := range []struct {
		dsn  string
		want string // "" allowed, else a part of the error
	}{
		{"postgres://u:p@db.example.com:5432/inv?sslmode=require", ""},
		{"host=db.example.com port=5432 user=u password=p dbname=inv sslmode=verify-full", ""},
		{"postgres://u:p@db.example.com/inv?sslkey=/var/run/secrets/kubernetes.io/serviceaccount/token", "sslkey"},
		{"postgres://u@db.example.com/inv?sslrootcert=/etc/kollect/webhook/tls.key", "sslrootcert"},
		{"postgres://u@db.example.com/inv?SSLCERT=/tmp/x", "sslcert"},
		{"host=db.example.com passfile=/var/run/secrets/kubernetes.io/serviceaccount/token", "passfile"},
		{"host=db.example.com sslkey = '/x y'", "sslkey"},
		{"service=platform", "service"},
		{"postgres:///inv?servicefile=/etc/pg_service.conf", "servicefile"},
		{"postgres://u@%2Fvar%2Frun%2Fpostgresql/inv", "unix socket"},
		{"postgres://u@/inv?host=/var/run/postgresql", "unix socket"},
		{"host=/tmp user=postgres", "unix socket"},
		{"host=db.example.com,/tmp user=postgres", "unix socket"},
	} {
		t.Run(tc.dsn, func(t *testing.T) {
			err := CheckDSN(tc.dsn)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), "serviceaccount"):
				t.Fatalf("the error quotes the DSN: %v", err)
			}
		})
	}
	if _, err := New(Config{DSN: "postgres://u@db.example.com/inv?sslkey=/nonexistent", Table: "t"}); err == nil || !strings.Contains(err.Error(), "sslkey") {
		t.Fatalf("New accepted a DSN naming a key file: %v", err)
	}
}
