package git_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/git"
)

// TestACanceledExportLeavesALocalRemoteWritable cancels exports to a
// file:// remote at many points of their push (what a SIGTERM does to the
// export in flight): git's receive-pack runs as a child process there, and
// killing it while it holds the branch's lock would leave the lock behind
// and fail every later push. Each canceled export must be followed by one
// that lands, and no lock file may remain.
func TestACanceledExportLeavesALocalRemoteWritable(t *testing.T) {
	bare := remote(t)
	s, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: t.TempDir(), Layout: git.Layout{Mode: "perResource", Content: "attributes"}})
	if err != nil {
		t.Fatal(err)
	}
	version := 0
	next := func() *rows.Snapshot {
		version++
		rs := make([]*rows.Row, 0, 100)
		for i := range 100 {
			rs = append(rs, row(t, fmt.Sprintf("app-%03d", i), fmt.Sprintf("nginx:%d", version)))
		}
		return snap(rs...)
	}
	if _, err := s.Export(context.Background(), next()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s.Export(context.Background(), next()); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	canceled := 0
	for i := range 36 {
		// Deadlines spread over a whole export, its push included.
		ctx, cancel := context.WithTimeout(context.Background(), took*time.Duration(i)/27)
		done := make(chan error, 1)
		go func() { _, err := s.Export(ctx, next()); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				canceled++
			}
		case <-time.After(time.Minute):
			t.Fatalf("an export canceled at %d/27 of its course never returned", i)
		}
		cancel()
		want := next()
		if _, err := s.Export(context.Background(), want); err != nil {
			t.Fatalf("after an export canceled at %d/27 of its course, the next one failed: %v", i, err)
		}
		if locks := lockFiles(t, bare); len(locks) > 0 {
			t.Fatalf("after an export canceled at %d/27 of its course the remote holds lock files %v", i, locks)
		}
		file := ""
		for _, f := range strings.Split(gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main"), "\n") {
			if strings.Contains(f, "app-000") {
				file = f
			}
		}
		if got := gitCmd(t, bare, "show", "main:"+file); !strings.Contains(got, fmt.Sprintf("nginx:%d", version)) {
			t.Fatalf("the branch does not hold the last export:\n%s", got)
		}
	}
	t.Logf("%d of 36 exports ended by their deadline (an export takes %s)", canceled, took)
}

// lockFiles lists the *.lock files under a bare repository.
func lockFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".lock") {
			out = append(out, strings.TrimPrefix(p, dir))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
