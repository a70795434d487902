package git_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"kollect.dev/kollect/sinks/git"
)

// unreachable lists the mirror's objects no reference reaches.
func unreachable(t *testing.T, mirror string) []string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", mirror, "fsck", "--unreachable", "--no-reflogs", "--no-progress").Output()
	if err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// Commits the remote no longer holds (here someone force-pushed the branch
// back) leave garbage in the mirror; a sink collects it, so the mirror
// holds what the remote holds however long the churn, and exports on after
// it.
func TestTheMirrorsGarbageIsCollected(t *testing.T) {
	for _, tc := range []struct {
		name    string
		every   int
		garbage bool
	}{{"collected every commit", 1, false}, {"not yet due", 1000, true}} {
		t.Run(tc.name, func(t *testing.T) {
			bare := remote(t)
			mirror := t.TempDir()
			s, err := git.New(git.Config{URL: "file://" + bare, MirrorDir: mirror, GCEvery: tc.every,
				Layout: git.Layout{Mode: "perResource", Content: "attributes", ItemPath: "apps/{sourceName}{extension}"}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := s.Export(ctx, snap(row(t, "web", "web:1"))); err != nil {
				t.Fatal(err)
			}
			seed := gitCmd(t, bare, "rev-parse", "main~1")
			for _, image := range []string{"web:2", "web:3"} {
				if _, err := s.Export(ctx, snap(row(t, "web", image), row(t, "api", image))); err != nil {
					t.Fatal(err)
				}
			}
			gitCmd(t, bare, "update-ref", "refs/heads/main", seed) // a force-push back to the seed
			if _, err := s.Export(ctx, snap(row(t, "web", "web:4"))); err != nil {
				t.Fatal(err)
			}
			left := unreachable(t, mirror)
			if tc.garbage != (len(left) > 0) {
				t.Fatalf("unreachable objects in the mirror: %v", left)
			}
			if _, err := s.Export(ctx, snap(row(t, "web", "web:5"), row(t, "api", "api:5"))); err != nil {
				t.Fatalf("export after a collection: %v", err)
			}
			if got := gitCmd(t, bare, "show", "main:apps/api.yaml"); !strings.Contains(got, "api:5") {
				t.Fatalf("after a collection the remote holds %q", got)
			}
		})
	}
}
