package git

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"kollect.dev/kollect/internal/eventually"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// git runs git in dir and returns its trimmed output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// awaitQueue waits up to 10 s until n requests queue on m.
func awaitQueue(t *testing.T, m *mirror, n int) {
	t.Helper()
	eventually.Check(t, 10*time.Second, "requests queued on the mirror", func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if len(m.queue) != n {
			return fmt.Errorf("%d of %d queued", len(m.queue), n)
		}
		return nil
	})
}

func teamRow(t *testing.T, team string) *rows.Row {
	t.Helper()
	r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: team, TargetName: "apps", Group: "apps", Version: "v1", Kind: "Deployment"},
		Namespace: team, Name: "web", UID: "uid-" + team}, rows.AttributesOf(map[string]any{"image": team + ":1"}))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestExportsQueuedOnOneBranchArePushedTogether: exports (and a writer
// record) that queue while another holds the mirror are served by one
// leader in one push; each inventory still gets a commit of its own, with
// its own message, and its owned record. A team whose export cannot be
// built (a collision) fails alone.
func TestExportsQueuedOnOneBranchArePushedTogether(t *testing.T) {
	dir := t.TempDir()
	bare := filepath.Join(dir, "remote.git")
	gitIn(t, dir, "init", "--bare", "-q", "-b", "main", bare)
	work := filepath.Join(dir, "seed")
	gitIn(t, dir, "clone", "-q", bare, work)
	if err := os.WriteFile(filepath.Join(work, "docs"), []byte("a file, not a directory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, work, "add", "docs")
	gitIn(t, work, "commit", "-q", "-m", "seed")
	gitIn(t, work, "push", "-q", "origin", "HEAD:main")
	gitIn(t, bare, "config", "core.logAllRefUpdates", "always") // a reflog entry per push from here
	clients := &sinks.Clients{}
	const teams = 8
	var ss []*Sink
	for i := range teams {
		l := Layout{Mode: "perResource", Content: "attributes"}
		if i == teams-1 {
			l.ItemPath = "docs/{sourceName}" // under the file docs: a collision
		}
		s, err := New(Config{URL: "file://" + bare, MirrorDir: filepath.Join(dir, "mirror"), Clients: clients, Layout: l,
			CommitMessage: "export {namespace}/{name}"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		ss = append(ss, s)
	}
	claimer, err := New(Config{URL: "file://" + bare, MirrorDir: filepath.Join(dir, "mirror"), Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(claimer.Close)
	m := ss[0].m
	m.turn <- struct{}{} // held: every export queues
	var wg sync.WaitGroup
	results := make([]error, teams+1)
	wg.Add(1)
	go func() { // a writer record, in the same batch
		defer wg.Done()
		results[teams] = claimer.SetWriter(context.Background(), rows.Identity{Namespace: "team-99", Name: "inv"}, "w-1")
	}()
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			team := fmt.Sprintf("team-%02d", i)
			snap := rows.NewSnapshot(rows.Identity{Namespace: team, Name: "inv"}, []*rows.Row{teamRow(t, team)}, time.Now())
			_, results[i] = s.Export(context.Background(), snap)
		}()
	}
	awaitQueue(t, m, teams+1)
	<-m.turn
	wg.Wait()
	for i, err := range results[:teams-1] {
		if err != nil {
			t.Errorf("team-%02d: %v", i, err)
		}
	}
	if err := results[teams]; err != nil {
		t.Errorf("the writer record: %v", err)
	}
	if w, err := claimer.Writer(context.Background(), rows.Identity{Namespace: "team-99", Name: "inv"}); err != nil || w != "w-1" {
		t.Errorf("the writer record reads %q (%v), want w-1", w, err)
	}
	if err := results[teams-1]; err == nil || !strings.Contains(err.Error(), "collision") {
		t.Errorf("the colliding team's export: %v, want its collision", err)
	}
	if moves := gitIn(t, bare, "reflog", "show", "main"); strings.Count(moves, "\n") != 0 {
		t.Errorf("the branch moved more than once, want one push for the batch:\n%s", moves)
	}
	msgs := strings.Split(gitIn(t, bare, "log", "--format=%s", "main", "^main~7"), "\n")
	if len(msgs) != teams-1 {
		t.Fatalf("the branch has %d commits, want one per team that exported: %v", len(msgs), msgs)
	}
	for i := range teams - 1 {
		want := fmt.Sprintf("export team-%02d/inv", i)
		if !strings.Contains(strings.Join(msgs, "\n"), want) {
			t.Errorf("no commit %q among %v", want, msgs)
		}
		files := gitIn(t, bare, "ls-tree", "-r", "--name-only", "main", fmt.Sprintf("default/team-%02d", i))
		if got := gitIn(t, bare, "show", "main:"+files); !strings.Contains(got, fmt.Sprintf("team-%02d:1", i)) {
			t.Errorf("team-%02d's file %s holds %q", i, files, got)
		}
		if ref := gitIn(t, bare, "for-each-ref", "--format=%(refname)", fmt.Sprintf("refs/kollect/owned/default/team-%02d/inv", i)); ref == "" {
			t.Errorf("team-%02d has no owned record", i)
		}
	}
}

// TestARestartedBatchReadsEveryRecordInOneGo: after a restart (a new
// mirror), queued exports read their owned records, fetched for the
// whole batch at once, and remove exactly the files of rows deleted
// meanwhile; a team with no record yet exports as new.
func TestARestartedBatchReadsEveryRecordInOneGo(t *testing.T) {
	dir := t.TempDir()
	bare := filepath.Join(dir, "remote.git")
	gitIn(t, dir, "init", "--bare", "-q", "-b", "main", bare)
	const teams = 5
	open := func(mirror string) []*Sink {
		clients := &sinks.Clients{}
		var ss []*Sink
		for range teams {
			s, err := New(Config{URL: "file://" + bare, MirrorDir: filepath.Join(dir, mirror), Clients: clients,
				Layout: Layout{Mode: "perResource", Content: "attributes"}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			ss = append(ss, s)
		}
		return ss
	}
	export := func(ss []*Sink, names func(team string) []string) {
		t.Helper()
		m := ss[0].m
		m.turn <- struct{}{}
		var wg sync.WaitGroup
		errs := make([]error, teams)
		for i, s := range ss {
			wg.Add(1)
			go func() {
				defer wg.Done()
				team := fmt.Sprintf("team-%d", i)
				var rs []*rows.Row
				for _, n := range names(team) {
					r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: team, TargetName: "apps", Group: "apps", Version: "v1", Kind: "Deployment"},
						Namespace: team, Name: n, UID: "uid-" + team + n}, rows.AttributesOf(map[string]any{"image": n}))
					if err != nil {
						errs[i] = err
						return
					}
					rs = append(rs, r)
				}
				_, errs[i] = s.Export(context.Background(), rows.NewSnapshot(rows.Identity{Namespace: team, Name: "inv"}, rs, time.Now()))
			}()
		}
		awaitQueue(t, m, teams)
		<-m.turn
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("team-%d: %v", i, err)
			}
		}
	}
	export(open("before"), func(team string) []string {
		if team == "team-4" {
			return nil // no rows: no record yet
		}
		return []string{"api", "web"}
	})
	export(open("after"), func(string) []string { return []string{"web"} }) // api deleted meanwhile; team-4 new
	got := gitIn(t, bare, "ls-tree", "-r", "--name-only", "main")
	want := "default/team-0/deployment/web.yaml\ndefault/team-1/deployment/web.yaml\ndefault/team-2/deployment/web.yaml\n" +
		"default/team-3/deployment/web.yaml\ndefault/team-4/deployment/web.yaml"
	if got != want {
		t.Fatalf("after the restart the branch holds\n%s\nwant\n%s", got, want)
	}
}

// TestWriterRecordsOfOneBatchShareOneListing: writer records queued
// together are recorded from one fresh listing of the remote, not one
// each (after a restart a thousand of them listed thousands of refs a
// thousand times in a row), and each still replaces its inventory's
// other writer.
func TestWriterRecordsOfOneBatchShareOneListing(t *testing.T) {
	dir := t.TempDir()
	bare := filepath.Join(dir, "remote.git")
	gitIn(t, dir, "init", "--bare", "-q", "-b", "main", bare)
	clients := &sinks.Clients{}
	const teams = 6
	var ss []*Sink
	for range teams {
		s, err := New(Config{URL: "file://" + bare, MirrorDir: filepath.Join(dir, "mirror"), Clients: clients})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		ss = append(ss, s)
	}
	id := func(i int) rows.Identity { return rows.Identity{Namespace: fmt.Sprintf("team-%d", i), Name: "inv"} }
	record := func(writer string) {
		t.Helper()
		m := ss[0].m
		m.turn <- struct{}{} // held: every record queues
		var wg sync.WaitGroup
		errs := make([]error, teams)
		for i, s := range ss {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.SetWriter(context.Background(), id(i), writer)
			}()
		}
		awaitQueue(t, m, teams)
		before := m.lists.Load()
		<-m.turn
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("team-%d: %v", i, err)
			}
		}
		if n := m.lists.Load() - before; n != 1 {
			t.Fatalf("%d writer records made %d listings, want 1", teams, n)
		}
	}
	record("cluster-a")
	record("cluster-b") // each replaces cluster-a's
	for i, s := range ss {
		if w, err := s.Writer(context.Background(), id(i)); err != nil || w != "cluster-b" {
			t.Errorf("team-%d's writer reads %q (%v), want cluster-b", i, w, err)
		}
	}
	if refs := gitIn(t, bare, "for-each-ref", "--format=%(refname)", "refs/kollect/writer/"); strings.Count(refs, "\n")+1 != teams || strings.Contains(refs, "cluster-a") {
		t.Errorf("the remote's writer refs:\n%s\nwant one per team, all cluster-b", refs)
	}
}
