package nats_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"kollect.dev/kollect/internal/servers/natstest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/nats"
)

// TestCredentials: token and user/password from the Secret authenticate;
// a wrong one is a permanent error that does not show it.
func TestCredentials(t *testing.T) {
	snap := sinktest.Snap(rows.Identity{Namespace: "default", Name: "inv"}, sinktest.Rows(3, "1"))
	for _, tc := range []struct {
		name   string
		server func(*server.Options)
		good   nats.Config
		bad    nats.Config
		secret string
	}{
		{name: "token", server: func(o *server.Options) { o.Authorization = "good-token" },
			good: nats.Config{Token: "good-token"}, bad: nats.Config{Token: "bad-token"}, secret: "bad-token"},
		{name: "username and password", server: func(o *server.Options) { o.Username, o.Password = "kollect", "good-pass" },
			good: nats.Config{Username: "kollect", Password: "good-pass"}, bad: nats.Config{Username: "kollect", Password: "bad-pass"}, secret: "bad-pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := natstest.Start(t, tc.server)
			run := func(cfg nats.Config) error {
				cfg.URL, cfg.Subject = ts.URL(), "inv"
				s, err := nats.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err = s.Export(ctx, rows.Diff(nil, snap))
				return err
			}
			if err := run(tc.good); err != nil {
				t.Fatalf("good credentials: %v", err)
			}
			err := run(tc.bad)
			if !errors.Is(err, sinks.ErrPermanent) || !strings.Contains(err.Error(), "authorization failed") || strings.Contains(err.Error(), tc.secret) {
				t.Fatalf("bad credentials: %v", err)
			}
		})
	}
}
