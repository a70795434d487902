package git_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
)

// TestSinksOfOneRemoteShareOneMirror: a team per namespace, each with its
// own sink, on two branches of one repository, exporting at once and
// adding and removing files (so owned records are superseded and the
// mirror collects garbage): the process holds one mirror, every export
// lands, the mirror never loses an object a ref reaches, and the last sink
// to close removes it.
func TestSinksOfOneRemoteShareOneMirror(t *testing.T) {
	bare := remote(t)
	gitCmd(t, bare, "branch", "audit", "main")
	clients := &sinks.Clients{}
	dir := filepath.Join(t.TempDir(), "repo")
	const teams, rounds = 8, 4
	var all []*git.Sink
	var wg sync.WaitGroup
	errs := make(chan error, teams*rounds)
	for i := range teams {
		team := fmt.Sprintf("team-%02d", i)
		branch := []string{"main", "audit"}[i%2]
		s, err := openSink(t, git.Config{URL: "file://" + bare, Branch: branch, MirrorDir: dir, Clients: clients, GCEvery: 5,
			Layout: git.Layout{Mode: "perResource", Content: "attributes", Cluster: team}})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				// Round r holds apps r..r+2: one file removed, one added.
				var rs []*rows.Row
				for a := r; a < r+3; a++ {
					rs = append(rs, row(t, fmt.Sprintf("app-%d", a), fmt.Sprintf("%s:%d", team, r)))
				}
				if _, err := s.Export(context.Background(), snap(rs...)); err != nil {
					errs <- fmt.Errorf("%s, round %d: %w", team, r, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := clients.Open(); got != 1 {
		t.Errorf("%d mirrors held for one repository, want 1", got)
	}
	unreachable(t, dir, all...) // fails on an object a ref reaches but the mirror lost
	for i := range teams {
		team := fmt.Sprintf("team-%02d", i)
		branch := []string{"main", "audit"}[i%2]
		got := strings.Fields(gitCmd(t, bare, "ls-tree", "-r", "--name-only", branch, team))
		want := fmt.Sprintf("[%[1]s/demo/deployment/app-%[2]d.yaml %[1]s/demo/deployment/app-%[3]d.yaml %[1]s/demo/deployment/app-%[4]d.yaml]",
			team, rounds-1, rounds, rounds+1)
		if fmt.Sprint(got) != want {
			t.Errorf("%s: branch %s holds %v, want %s", team, branch, got, want)
		}
	}
	for _, s := range all[1:] {
		s.Close()
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the mirror went while a sink still holds it: %v", err)
	}
	all[0].Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the last sink closed and the mirror stays: %v", err)
	}
}

// TestASharedMirrorKeepsWhatAnotherRecordReaches: two inventories that own
// the same paths (a path template without the inventory) have owned
// records with equal trees. When one drops a file, the tree it supersedes
// is still the other's: a mirror two sinks share must keep it, or the
// other's next export cannot edit its record.
func TestASharedMirrorKeepsWhatAnotherRecordReaches(t *testing.T) {
	bare := remote(t)
	clients := &sinks.Clients{}
	dir := filepath.Join(t.TempDir(), "repo")
	ctx := context.Background()
	export := func(s *git.Sink, inventory, image string, names ...string) {
		t.Helper()
		var rs []*rows.Row
		for _, n := range names {
			rs = append(rs, row(t, n, image))
		}
		sn := snap(rs...)
		sn.Inventory.Name = inventory
		if _, err := s.Export(ctx, sn); err != nil {
			t.Fatalf("%s: %v", inventory, err)
		}
	}
	var ss []*git.Sink
	for range 2 {
		s, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: dir, Clients: clients, GCEvery: 1 << 30,
			Layout: git.Layout{Mode: "perResource", Content: "attributes", ItemPath: "apps/{sourceName}{extension}"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		ss = append(ss, s)
	}
	export(ss[0], "a", "a:1", "web", "api")
	export(ss[1], "b", "b:1", "web", "api")
	export(ss[0], "a", "a:2", "web") // supersedes the bucket tree b's record still holds
	export(ss[1], "b", "b:2", "web")
	unreachable(t, dir, ss...)
	if got := gitCmd(t, bare, "show", "main:apps/web.yaml"); !strings.Contains(got, "b:2") {
		t.Fatalf("the branch holds %q, want b's last export", got)
	}
}

// A process killed while go-git rewrote a ref (it truncates, then writes)
// leaves the ref file empty, and every read of the mirror's refs failed
// ("ref file is empty"): the restarted operator never fetched again. The
// mirror drops torn refs when it opens; the next fetch brings them back.
func TestAMirrorWithTornRefsHeals(t *testing.T) {
	bare := remote(t)
	mirror := t.TempDir()
	cfg := git.Config{URL: "file://" + bare, MirrorDir: mirror, Layout: git.Layout{Mode: "perResource", Content: "attributes"}}
	s, err := openSink(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Export(ctx, snap(row(t, "web", "web:1"))); err != nil {
		t.Fatal(err)
	}
	s.Close()
	torn := 0
	_ = filepath.WalkDir(filepath.Join(mirror, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			torn++
			return os.Truncate(p, 0)
		}
		return nil
	})
	if err := os.Truncate(filepath.Join(mirror, "HEAD"), 0); err != nil {
		t.Fatal(err)
	}
	if torn == 0 {
		t.Fatal("the mirror holds no loose ref to tear")
	}
	s, err = openSink(t, cfg) // the restarted operator, on the same mirror
	if err != nil {
		t.Fatalf("open a mirror with %d torn refs: %v", torn, err)
	}
	defer s.Close()
	if _, err := s.Export(ctx, snap(row(t, "web", "web:2"))); err != nil {
		t.Fatalf("export through a mirror with %d torn refs: %v", torn, err)
	}
	if got := gitCmd(t, bare, "show", "main:"+findFile(t, bare, "web")); !strings.Contains(got, "web:2") {
		t.Fatalf("the remote holds:\n%s", got)
	}
}
