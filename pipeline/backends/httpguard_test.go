package backends

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
)

// guardCases says how each registered backend is shown to dial through
// the endpoint guard: an HTTP backend by a sink on a rebinding host name
// (built through the registry, here), the others by their own table in
// TestEveryBackendDialsThroughTheGuard. A backend registered without a
// case fails TestEveryRegisteredBackendHasAGuardCase.
var guardCases = map[string]string{
	"snapshot/git": "http", "snapshot/gitlab": "http", "snapshot/s3": "http", "snapshot/gcs": "http", "snapshot/azureblob": "http",
	"database/bigquery": "network", "database/postgres": "network", "database/mongodb": "network",
	"event/nats": "network", "event/kafka": "network",
}

func TestEveryRegisteredBackendHasAGuardCase(t *testing.T) {
	for _, typ := range Types() {
		if _, ok := guardCases[typ.Family+"/"+typ.Name]; !ok {
			t.Errorf("%s/%s has no case showing that it dials through the endpoint guard: add one", typ.Family, typ.Name)
		}
	}
}

// Every HTTP backend, built through the registry from a sink whose host
// name resolves to a public address when it is checked and to loopback
// when it is dialled (DNS rebinding), is refused at the dial, though a
// server listens there; the server never sees a request.
func TestEveryHTTPBackendIsRefusedARebindingHost(t *testing.T) {
	var reached atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		http.NotFound(w, nil)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	base := "http://rebind.example:" + port
	plain := map[string]string{git.AllowPlainHTTPCredentials: "true"}
	snapshot := func(typ, ep string) ctrlclient.Object {
		s := &kollectv1alpha1.KollectSnapshotSink{ObjectMeta: metav1.ObjectMeta{Name: typ, Namespace: "team-a", Annotations: plain}}
		s.Spec.Type, s.Spec.Endpoint = typ, ep
		return s
	}
	keys := map[string][]byte{"accessKeyID": []byte("id"), "secretAccessKey": []byte("key")}
	cases := map[string]struct {
		sink  ctrlclient.Object
		creds map[string][]byte
	}{
		"snapshot/git":       {snapshot("git", base+"/inventory.git"), nil},
		"snapshot/gitlab":    {snapshot("gitlab", base+"/platform/inventory"), map[string][]byte{"token": []byte("t")}},
		"snapshot/s3":        {snapshot("s3", base+"/bucket/clusters"), keys},
		"snapshot/gcs":       {snapshot("gcs", base+"/bucket/clusters"), keys},
		"snapshot/azureblob": {snapshot("azureblob", base+"/account/container"), map[string][]byte{"accountName": []byte("account"), "sasToken": []byte("sv=x")}},
	}
	git.GuardHTTP(GuardedDial(endpoint.Policy{Lookup: rebinding()}))
	t.Cleanup(func() {
		client.InstallProtocol("http", githttp.DefaultClient)
		client.InstallProtocol("https", githttp.DefaultClient)
	})
	for id, kind := range guardCases {
		if kind != "http" {
			continue
		}
		t.Run(id, func(t *testing.T) {
			tc, ok := cases[id]
			if !ok {
				t.Fatalf("no rebinding sink for %s", id)
			}
			policy := endpoint.Policy{Lookup: rebinding()} // the check sees a public address, the dial loopback
			if id == "snapshot/git" {
				git.GuardHTTP(GuardedDial(policy)) // Git's transport is process-wide
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b, err := Default(policy).Build(ctx, tc.sink, Credentials{Data: tc.creds}, t.TempDir())
			if err == nil {
				defer closeBackend(b)
				_, err = b.Export(ctx, rows.Diff(nil, sinktest.Snap(rows.Identity{Namespace: "team-a", Name: "inv"}, sinktest.Rows(1, "1"))))
			}
			if err == nil || !strings.Contains(err.Error(), "loopback") {
				t.Fatalf("want the rebound dial refused, naming loopback; got %v", err)
			}
			if !errors.Is(err, sinks.ErrPermanent) {
				t.Errorf("a refused endpoint should be permanent: %v", err)
			}
		})
	}
	if n := reached.Load(); n > 0 {
		t.Fatalf("the loopback server got %d requests", n)
	}
}

// rebinding answers a public address to the first lookup of each name and
// loopback to every later one.
func rebinding() func(context.Context, string) ([]netip.Addr, error) {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		mu.Lock()
		defer mu.Unlock()
		if !seen[host] {
			seen[host] = true
			return []netip.Addr{netip.MustParseAddr("192.0.2.10")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
}
