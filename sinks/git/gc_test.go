package git_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/git"
)

// unreachable lists the mirror's objects no reference reaches.
func unreachable(t *testing.T, mirror string, open ...*git.Sink) []string {
	t.Helper()
	for _, s := range open {
		if err := s.CollectDue(); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("git", "--git-dir", mirror, "fsck", "--unreachable", "--no-reflogs", "--no-progress")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git fsck: %v\n%s%s", err, out, stderr.String())
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
		depth   int // CloneDepth: a shallow mirror is collected as well
	}{{"collected every commit", 1, false, 0}, {"not yet due", 1000, true, 0}, {"a shallow mirror", 1, false, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			bare := remote(t)
			if tc.depth > 0 {
				bare = longRemote(t, 5) // a history the mirror does not fetch
			}
			mirror := t.TempDir()
			s, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: mirror, GCEvery: tc.every, CloneDepth: tc.depth,
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
			if shallow := exec.Command("git", "--git-dir", mirror, "rev-parse", "--is-shallow-repository"); tc.depth > 0 {
				if out, _ := shallow.Output(); strings.TrimSpace(string(out)) != "true" {
					t.Fatalf("the mirror is not shallow: %s", out)
				}
			}
			left := unreachable(t, mirror, s)
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

// TestASingleWritersMirrorHoldsNoGarbage: each export that adds or removes
// a file replaces the owned record; the sink deletes the record it pushed
// over from the mirror itself, so a lone writer's mirror holds no garbage
// without a collection, and a second process on the same mirror reads the
// record back and exports on.
func TestASingleWritersMirrorHoldsNoGarbage(t *testing.T) {
	bare := remote(t)
	mirror := t.TempDir()
	cfg := git.Config{URL: "file://" + bare, MirrorDir: mirror, GCEvery: 1 << 30,
		Layout: git.Layout{Mode: "perResource", Content: "attributes", ItemPath: "apps/{sourceName}{extension}"}}
	ctx := context.Background()
	export := func(s *git.Sink, names ...string) {
		t.Helper()
		var rs []*rows.Row
		for _, n := range names {
			rs = append(rs, row(t, n, n+":1"))
		}
		if _, err := s.Export(ctx, snap(rs...)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := openSink(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprintf("app-%02d", i))
		if i%3 == 2 {
			names = names[1:] // one file removed, one added
		}
		export(s, names...)
	}
	if left := unreachable(t, mirror, s); len(left) > 0 {
		t.Fatalf("%d unreachable objects in the mirror after 12 exports: %v", len(left), left)
	}
	export(s) // the record owns nothing: the empty tree
	export(s, names...)
	// fsck fails too on an object reached but missing.
	if left := garbage(t, mirror, s); len(left) > 0 {
		t.Fatalf("%d unreachable objects in the mirror after the record was empty: %v", len(left), left)
	}
	again, err := openSink(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	export(again, names[2:]...)
	if left := garbage(t, mirror, again); len(left) > 0 {
		t.Fatalf("%d unreachable objects in the mirror after a second process's export: %v", len(left), left)
	}
	got := strings.Fields(gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main", "apps"))
	want := []string{}
	for _, n := range names[2:] {
		want = append(want, "apps/"+n+".yaml")
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the remote holds %v, want %v", got, want)
	}
	gitCmd(t, bare, "fsck", "--strict", "--no-progress")
}

// garbage lists the mirror's unreachable objects but the empty tree, which
// is never deleted (a commit of the branch may have it).
func garbage(t *testing.T, mirror string, open ...*git.Sink) []string {
	t.Helper()
	var out []string
	for _, f := range unreachable(t, mirror, open...) {
		if len(f) == 40 && f != "4b825dc642cb6eb9a060e54bf8d69288fbee4904" {
			out = append(out, f)
		}
	}
	return out
}
