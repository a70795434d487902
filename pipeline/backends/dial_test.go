//go:build integration

package backends

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/internal/servers/bqtest"
	"kollect.dev/kollect/internal/servers/kafkatest"
	"kollect.dev/kollect/internal/servers/mongotest"
	"kollect.dev/kollect/internal/servers/natstest"
	"kollect.dev/kollect/internal/servers/pgtest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/bigquery"
	"kollect.dev/kollect/sinks/kafka"
	"kollect.dev/kollect/sinks/mongodb"
	"kollect.dev/kollect/sinks/nats"
	"kollect.dev/kollect/sinks/postgres"
)

// dialCase builds one network backend on a rebinding host name.
type dialCase struct {
	name string
	new  func() (sinks.Backend, error)
}

// Every network backend dials through the endpoint guard: a host name
// whose answer (after a rebinding) is loopback is refused at the address
// dialled, permanently, though a real server listens there.
func TestEveryBackendDialsThroughTheGuard(t *testing.T) {
	loopbackDNS := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	dial := GuardedDial(endpoint.Policy{AllowPrivate: true, Lookup: loopbackDNS})
	port := func(addr string) string {
		if i := strings.LastIndex(addr, ":"); i >= 0 {
			return addr[i+1:]
		}
		return addr
	}
	pg, ns, kf, mg, bq := pgtest.Start(t), natstest.Start(t), kafkatest.Start(t), mongotest.Start(t), bqtest.Start(t)
	bq.CreateDataset("p", "d", "")
	_, pgPort, _ := net.SplitHostPort(strings.Split(strings.TrimPrefix(pg.DSN(""), "postgres://postgres:"+pgtest.Password+"@"), "/")[0])
	cases := []dialCase{
		{"postgres", func() (sinks.Backend, error) {
			return postgres.New(postgres.Config{DSN: "postgres://postgres:" + pgtest.Password + "@rebind.example:" + pgPort + "/postgres?sslmode=disable&connect_timeout=5",
				Table: "guarded", Dial: dial})
		}},
		{"nats", func() (sinks.Backend, error) {
			return nats.New(nats.Config{URL: "nats://rebind.example:" + port(ns.URL()), Subject: "guarded", Dial: dial})
		}},
		{"kafka", func() (sinks.Backend, error) {
			return kafka.New(kafka.Config{Brokers: []string{"rebind.example:" + port(kf.Brokers()[0])}, Topic: "guarded", Dial: dial})
		}},
		{"mongodb", func() (sinks.Backend, error) {
			return mongodb.New(mongodb.Config{URI: "mongodb://rebind.example:" + port(mg.Addr) + "/?serverSelectionTimeoutMS=3000", Database: "d", Collection: "guarded", Dial: dial})
		}},
		{"bigquery", func() (sinks.Backend, error) {
			hc, err := sinks.HTTPClient(dial, nil, false)
			if err != nil {
				return nil, err
			}
			return bigquery.New(context.Background(), bigquery.Config{Project: "p", Dataset: "d", Table: "guarded", NoAuth: true,
				Endpoint: "http://rebind.example:" + port(bq.Addr()), HTTP: hc})
		}},
	}
	for id, kind := range guardCases {
		if kind == "network" && !slices.ContainsFunc(cases, func(c dialCase) bool { return id == "database/"+c.name || id == "event/"+c.name }) {
			t.Errorf("%s: no case in this table", id)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.new()
			if err != nil {
				t.Fatal(err)
			}
			defer closeBackend(b)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = b.Export(ctx, rows.Diff(nil, sinktest.Snap(rows.Identity{Namespace: "ns", Name: "inv"}, sinktest.Rows(1, "1"))))
			if err == nil {
				t.Fatal("the export reached a loopback server through a host name")
			}
			if !strings.Contains(err.Error(), "loopback") {
				t.Fatalf("want the refusal named, got %v", err)
			}
			if !errors.Is(err, sinks.ErrPermanent) {
				t.Errorf("a refused endpoint should be permanent: %v", err)
			}
		})
	}
}

// A file:// Git remote is a repository on the operator's own disk: refused
// unless the operator runs with --dev-allow-loopback-sinks.
func TestFileRemotesOnlyForDevelopment(t *testing.T) {
	sink := &kollectv1alpha1.KollectSnapshotSink{ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: "team"}}
	sink.Spec.Type, sink.Spec.Endpoint = "git", "file:///etc/kollect/platform.git"
	ctx := context.Background()
	_, err := Default(endpoint.Policy{AllowPrivate: true}).Build(ctx, sink, Credentials{}, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "--dev-allow-loopback-sinks") || !errors.Is(err, sinks.ErrPermanent) {
		t.Fatalf("want a permanent refusal naming the development flag, got %v", err)
	}
	if _, err := Default(endpoint.Policy{AllowLoopback: true}).Build(ctx, sink, Credentials{}, t.TempDir()); err != nil {
		t.Fatalf("with the development flag a file:// remote is accepted: %v", err)
	}
}
