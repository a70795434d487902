package git_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"kollect.dev/kollect/sinks/git"
)

// With the guard installed, go-git dials every HTTP remote, and every
// redirect it follows, through the guard's dialer.
func TestGitHTTPDialsThroughTheGuard(t *testing.T) {
	var mu sync.Mutex
	var dialled []string
	refused := errors.New("refused by the endpoint guard")
	target := httptest.NewServer(http.NotFoundHandler())
	defer target.Close()
	redirect := httptest.NewServer(http.RedirectHandler(target.URL+"/repo.git/info/refs?service=git-upload-pack", http.StatusFound))
	defer redirect.Close()
	git.GuardHTTP(func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialled = append(dialled, addr)
		mu.Unlock()
		if addr == strings.TrimPrefix(target.URL, "http://") {
			return nil, refused // the redirect's destination is forbidden
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	})
	t.Cleanup(func() {
		client.InstallProtocol("http", githttp.DefaultClient)
		client.InstallProtocol("https", githttp.DefaultClient)
	})
	err := git.Probe(context.Background(), git.Config{URL: redirect.URL + "/repo.git", MirrorDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), refused.Error()) {
		t.Fatalf("want the redirect's destination refused by the guard, got %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dialled) != 2 || dialled[0] != strings.TrimPrefix(redirect.URL, "http://") {
		t.Fatalf("want the remote and then the redirect's destination dialled through the guard, got %v", dialled)
	}
}
