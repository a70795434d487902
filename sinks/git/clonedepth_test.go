package git_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/sinks/git"
)

// longRemote is a remote whose branch already has 1+n commits.
func longRemote(t *testing.T, n int) string {
	t.Helper()
	bare := remote(t)
	work := filepath.Join(t.TempDir(), "work")
	gitCmd(t, filepath.Dir(work), "clone", "-q", bare, work)
	for i := range n {
		if err := os.WriteFile(filepath.Join(work, "history.txt"), []byte(strconv.Itoa(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		gitCmd(t, work, "add", "history.txt")
		gitCmd(t, work, "commit", "-q", "-m", fmt.Sprint("commit ", i))
	}
	gitCmd(t, work, "push", "-q", "origin", "HEAD:main")
	return bare
}

// A mirror's first fetch brings cloneDepth commits of the branch (1 by
// default, as upstream), not the history every export ever added; the
// exports land on the remote's history all the same, through restarts
// and garbage collections of the shallow mirror.
func TestCloneDepthBoundsTheMirrorsHistory(t *testing.T) {
	for _, tc := range []struct {
		depth      int32 // spec.git.cloneDepth; 0: unset
		wantMirror int   // commits of the branch the mirror holds after 3 exports
	}{{0, 1 + 3}, {1, 1 + 3}, {5, 5 + 3}, {1000, 31 + 3}} {
		t.Run(fmt.Sprint("cloneDepth ", tc.depth), func(t *testing.T) {
			bare := longRemote(t, 30)
			spec := &kollectv1alpha1.KollectSnapshotSinkSpec{Type: "git", SinkCommonFields: kollectv1alpha1.SinkCommonFields{
				Endpoint: "file://" + bare, Layout: &kollectv1alpha1.LayoutSpec{Mode: "perResource", Content: "attributes"}}}
			if tc.depth > 0 {
				spec.Git = &kollectv1alpha1.GitSpec{CloneDepth: tc.depth}
			}
			mirror := t.TempDir()
			ctx := context.Background()
			for i := range 3 {
				cfg, err := git.FromSpec("inventory", spec, nil, mirror)
				if err != nil {
					t.Fatal(err)
				}
				cfg.GCEvery = 1
				s, err := openSink(t, cfg) // a new sink each time: a restart on the same mirror
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Export(ctx, snap(row(t, "cart", fmt.Sprint("cart:", i)))); err != nil {
					t.Fatalf("export %d: %v", i, err)
				}
				s.Close()
			}
			if got := gitCmd(t, bare, "rev-list", "--count", "main"); got != "34" {
				t.Errorf("the remote's branch has %s commits, want its 31 and the 3 exports'", got)
			}
			if out := gitCmd(t, bare, "fsck", "--no-progress"); out != "" {
				t.Errorf("remote fsck: %s", out)
			}
			if got := gitCmd(t, mirror, "rev-list", "--count", "refs/remotes/origin/main"); got != strconv.Itoa(tc.wantMirror) {
				t.Errorf("the mirror holds %s commits of the branch, want %d", got, tc.wantMirror)
			}
		})
	}
}
