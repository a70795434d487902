//go:build integration

package backends

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/bigquery"
	"kollect.dev/kollect/sinks/bigquery/bqtest"
	"kollect.dev/kollect/sinks/git"
	"kollect.dev/kollect/sinks/kafka"
	"kollect.dev/kollect/sinks/kafka/kafkatest"
	"kollect.dev/kollect/sinks/mongodb"
	"kollect.dev/kollect/sinks/mongodb/mongotest"
	"kollect.dev/kollect/sinks/nats"
	"kollect.dev/kollect/sinks/nats/natstest"
	"kollect.dev/kollect/sinks/postgres"
	"kollect.dev/kollect/sinks/postgres/pgtest"
	"kollect.dev/kollect/sinks/sinktest"
)

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
	for _, tc := range []struct {
		name string
		new  func() (sinks.Backend, error)
	}{
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
	} {
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

// A Git remote whose name resolves to a public address when the backend is
// built and checked, and to loopback when it dials (DNS rebinding), is
// refused at the dial, though a Git server listens there.
func TestGitRebindingBetweenCheckAndDialIsRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	var lookups atomic.Int32
	rebinding := func(context.Context, string) ([]netip.Addr, error) {
		if lookups.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("192.0.2.10")}, nil // the check's answer (never dialled)
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	policy := endpoint.Policy{Lookup: rebinding}
	git.GuardHTTP(GuardedDial(policy))
	t.Cleanup(func() {
		client.InstallProtocol("http", githttp.DefaultClient)
		client.InstallProtocol("https", githttp.DefaultClient)
	})
	var sink kollectv1alpha1.KollectSnapshotSink
	sink.Name, sink.Namespace = "rebinding", "team-a"
	sink.Spec.Type, sink.Spec.Endpoint = "git", "http://rebind.example:"+strings.Split(srv.URL, ":")[2]+"/inventory.git"
	b, err := Default(policy).Build(context.Background(), &sink, Credentials{}, t.TempDir())
	if err != nil {
		t.Fatalf("the check's answer was public, so the backend is built: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = b.Export(ctx, rows.Diff(nil, sinktest.Snap(rows.Identity{Namespace: "team-a", Name: "inv"}, sinktest.Rows(1, "1"))))
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("want the rebound dial refused, got %v", err)
	}
	if lookups.Load() < 2 {
		t.Fatalf("the dial did not resolve the name again (%d lookups)", lookups.Load())
	}
}
