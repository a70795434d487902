package faults

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rejectPushes makes the Git remote refuse every push while the returned
// marker file exists (a pre-receive hook, as a server-side check would).
func (r *rig) rejectPushes() (marker string) {
	r.t.Helper()
	marker = filepath.Join(r.dir, "reject-pushes")
	hook := "#!/bin/sh\nif [ -f '" + marker + "' ]; then echo 'rejected by the test' >&2; exit 1; fi\n"
	if err := os.WriteFile(filepath.Join(r.bare, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		r.t.Fatal(err)
	}
	return marker
}

// failures is the number of failed exports in a row a binding reports.
func (r *rig) failures(binding string) int {
	st, err := r.inventoryStatus()
	if err != nil {
		return 0
	}
	exports, _ := st["sinkExports"].([]any)
	for _, e := range exports {
		if m, _ := e.(map[string]any); m["name"] == binding {
			n, _ := m["consecutiveFailures"].(int64)
			return int(n)
		}
	}
	return 0
}

// TestAFailedCommitOrManifestThenARevertEndsExact: a change to every object
// is exported while the Git remote refuses pushes and the S3 manifest
// cannot be written (503), after the objects it names were; then every
// object goes back to what the sinks held before. Each sink ends holding
// the cluster: the bucket's objects that the failed export overwrote are
// written back (the retry cannot trust the manifest, which matches the
// cluster again), and Git never made a commit.
func TestAFailedCommitOrManifestThenARevertEndsExact(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "faults-revert")
	r.apply()
	n := objects()
	want, first := r.seed(ctx, n)
	marker := r.rejectPushes()
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.s3proxy.FailWhen(func(req *http.Request) bool {
		return req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/.kollect/") && strings.HasSuffix(req.URL.Path, "/inventory.json")
	})
	if err := r.write(ctx, 0, n, "v2"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the change fails in Git and at the S3 manifest", func() error {
		if len(r.s3proxy.Failed()) == 0 || r.failures("snapshot/git") == 0 {
			return fmt.Errorf("%d manifest writes failed, Git failures %d", len(r.s3proxy.Failed()), r.failures("snapshot/git"))
		}
		return nil
	})
	overwritten := 0
	if got, err := r.s3State(ctx); err == nil {
		for _, v := range got {
			if v == "v2" {
				overwritten++
			}
		}
	}
	if overwritten == 0 {
		t.Fatal("the failed export overwrote no object: the scenario did not happen")
	}
	if err := r.write(ctx, 0, n, "v1"); err != nil { // the revert
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	r.s3proxy.FailWhen(nil)
	back := time.Now()
	h := r.waitConverged(ctx, want, 5*time.Minute)
	t.Logf("%d S3 objects held the failed export's rows; every sink exact %s after the faults ended", overwritten, time.Since(back).Round(time.Millisecond))
	r.nothingDeleted(ctx, h)
	if len(h.commits) != len(first.commits) {
		r.noRowEverDropped(len(first.commits), n)
		t.Fatalf("Git holds %d commit(s) more, though every push of the change was refused and the cluster went back", len(h.commits)-len(first.commits))
	}
}
