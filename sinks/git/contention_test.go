package git_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
)

// TestClustersPushingToOneRepositoryAllLand: three clusters' sinks (a
// fleet sharing one repository) export at once, again and again. A push
// another cluster beat is rebuilt on the new tip and pushed again until it
// lands: no export fails, and the branch ends with every cluster's last
// rows.
func TestClustersPushingToOneRepositoryAllLand(t *testing.T) {
	bare := remote(t)
	const rounds = 12
	clusters := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var took []time.Duration
	conflicts := 0
	errs := make(chan error, len(clusters)*rounds)
	for _, c := range clusters {
		s, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: t.TempDir(),
			Layout: git.Layout{Mode: "perResource", Content: "attributes", Cluster: c}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				rs := []*rows.Row{row(t, "web-"+c, fmt.Sprintf("web:%d", r)), row(t, "api-"+c, fmt.Sprintf("api:%d", r))}
				start := time.Now()
				ack, err := s.Export(context.Background(), snap(rs...))
				if err != nil {
					errs <- fmt.Errorf("cluster %s, round %d: %w", c, r, err)
				}
				mu.Lock()
				took = append(took, time.Since(start))
				conflicts += ack.Conflicts
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if conflicts == 0 {
		t.Error("no export reported a push another writer beat: the writers did not race, or rebuilds go uncounted")
	}
	slices.Sort(took)
	t.Logf("%d exports by %d writers at once, %d pushes rebuilt: commit latency p50 %s, p99 %s, max %s", len(took), len(clusters), conflicts,
		took[len(took)/2].Round(time.Millisecond), took[len(took)*99/100].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	for _, c := range clusters {
		got := gitCmd(t, bare, "show", "main:"+c+"/demo/deployment/web-"+c+".yaml")
		if !strings.Contains(got, fmt.Sprintf("web:%d", rounds-1)) {
			t.Errorf("cluster %s: the branch holds\n%s\nwant its last round", c, got)
		}
	}
	// The whole history, not only its end: once a cluster's files are on
	// the branch, no later commit (a rebuild on another cluster's tip)
	// lacks them.
	seen := map[string]bool{}
	for _, commit := range strings.Fields(gitCmd(t, bare, "rev-list", "--reverse", "main")) {
		files := gitCmd(t, bare, "ls-tree", "-r", "--name-only", commit)
		for _, c := range clusters {
			has := strings.Contains(files, c+"/demo/deployment/web-"+c+".yaml") && strings.Contains(files, c+"/demo/deployment/api-"+c+".yaml")
			if seen[c] && !has {
				t.Fatalf("commit %s lacks cluster %s's files, which an earlier commit had:\n%s", commit, c, files)
			}
			seen[c] = seen[c] || has
		}
	}
}

// TestSinksOfOneProcessTakeTurnsOnABranch: many inventories of one
// operator on one repository (a team per namespace) share its mirror and
// the mirror's turn, so their exports queue instead of racing: none is
// rebuilt on another's tip, and every one lands.
func TestSinksOfOneProcessTakeTurnsOnABranch(t *testing.T) {
	bare := remote(t)
	clients := &sinks.Clients{}
	const teams, rounds = 12, 3
	var wg sync.WaitGroup
	var mu sync.Mutex
	conflicts := 0
	errs := make(chan error, teams*rounds)
	for i := range teams {
		team := fmt.Sprintf("team-%02d", i)
		s, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: t.TempDir(), Clients: clients,
			Layout: git.Layout{Mode: "perResource", Content: "attributes", Cluster: team}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				ack, err := s.Export(context.Background(), snap(row(t, "web-"+team, fmt.Sprintf("web:%d", r))))
				if err != nil {
					errs <- fmt.Errorf("%s, round %d: %w", team, r, err)
				}
				mu.Lock()
				conflicts += ack.Conflicts
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if conflicts != 0 {
		t.Errorf("%d pushes of one process were rebuilt on another's tip: the sinks raced instead of taking turns", conflicts)
	}
	if got := clients.Open(); got != 1 {
		t.Errorf("%d mirrors held for one repository, want 1", got)
	}
	for i := range teams {
		team := fmt.Sprintf("team-%02d", i)
		if got := gitCmd(t, bare, "show", "main:"+team+"/demo/deployment/web-"+team+".yaml"); !strings.Contains(got, fmt.Sprintf("web:%d", rounds-1)) {
			t.Errorf("%s: the branch holds\n%s\nwant its last round", team, got)
		}
	}
}
