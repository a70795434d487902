package git_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
)

// httpRemote serves the bare repositories under root with git's own smart
// HTTP backend, behind basic auth that accepts one token.
func httpRemote(t *testing.T, root, token string) *httptest.Server {
	t.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=kollect"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pass, ok := r.BasicAuth(); !ok || pass != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPRemoteWithTokenAuth(t *testing.T) {
	bare := remote(t)
	gitCmd(t, bare, "config", "http.receivepack", "true")
	srv := httpRemote(t, filepath.Dir(bare), "s3cret")
	url := srv.URL + "/" + filepath.Base(bare)

	good, err := git.New(git.Config{URL: url, AllowPlainHTTPCredentials: true, Token: "s3cret", MirrorDir: t.TempDir(), Layout: git.Layout{Format: "json"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := good.Export(context.Background(), snap(row(t, "a", "x:1"))); err != nil {
		t.Fatalf("export over HTTP with a valid token: %v", err)
	}
	if got := gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main"); got != "README.md\ninventory/default/demo-inventory.json" {
		t.Fatalf("files after an HTTP push:\n%s", got)
	}
	if err := git.Probe(context.Background(), git.Config{URL: url, AllowPlainHTTPCredentials: true, Token: "s3cret"}); err != nil {
		t.Errorf("probe with a valid token: %v", err)
	}

	bad, err := git.New(git.Config{URL: url, AllowPlainHTTPCredentials: true, Token: "wrong", MirrorDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Export(context.Background(), snap(row(t, "a", "x:2")))
	if !errors.Is(err, sinks.ErrPermanent) {
		t.Fatalf("a rejected token must be a permanent error, got %v", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("the error leaks the token: %v", err)
	}
}
