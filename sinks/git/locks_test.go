package git_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kollect.dev/kollect/sinks/git"
)

// A git process that died during a ref update leaves the ref's lock in the
// repository, and every later push is refused. Against a local remote the
// export fails at once (not after a minute of retries) naming the file to
// remove, and succeeds once it is removed; Kollect never removes it.
func TestAStaleLockInALocalRemoteIsNamed(t *testing.T) {
	bare := remote(t)
	s, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: t.TempDir(), Layout: git.Layout{Mode: "perResource", Content: "attributes"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Export(ctx, snap(row(t, "cart", "cart:1.0"))); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(bare, "refs", "heads", "main.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	tip := gitCmd(t, bare, "rev-parse", "main")

	start := time.Now()
	_, err = s.Export(ctx, snap(row(t, "cart", "cart:1.1")))
	if err == nil || !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "remove them if no git process is writing") {
		t.Fatalf("want an error naming %s, got %v", lock, err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the refused export took %s: it retried a lock that cannot go away", took)
	}
	if _, statErr := os.Stat(lock); statErr != nil {
		t.Fatalf("the lock must be left for its owner to judge: %v", statErr)
	}
	if got := gitCmd(t, bare, "rev-parse", "main"); got != tip {
		t.Fatalf("the branch moved from %s to %s", tip, got)
	}

	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Export(ctx, snap(row(t, "cart", "cart:1.1"))); err != nil {
		t.Fatalf("after the lock is removed: %v", err)
	}
	if got := gitCmd(t, bare, "show", "main:"+findFile(t, bare, "cart")); !strings.Contains(got, "cart:1.1") {
		t.Fatalf("the remote holds:\n%s", got)
	}
}

func findFile(t *testing.T, bare, name string) string {
	t.Helper()
	for _, f := range strings.Split(gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main"), "\n") {
		if strings.Contains(f, name) {
			return f
		}
	}
	t.Fatalf("no file for %s in the remote", name)
	return ""
}
