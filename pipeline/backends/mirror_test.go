//go:build integration

package backends_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/pipeline/backends"
)

// TestInventoriesOnOneRepositoryShareOneMirror: the Git backends the
// cache builds for many inventories on one repository keep one mirror
// under the state directory; a probe of the sink keeps one of its own
// elsewhere (it neither opens the shared one nor holds it); the mirror
// goes with the last inventory forgotten.
func TestInventoriesOnOneRepositoryShareOneMirror(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "remote.git")
	if out, err := exec.Command("git", "init", "--bare", "-q", "-b", "main", bare).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	registry := backends.Default(endpoint.Policy{AllowLoopback: true})
	state := t.TempDir()
	cache := &backends.Cache{Registry: registry, StateDir: state}
	sink := func(ns string) *kollectv1alpha1.KollectSnapshotSink {
		return &kollectv1alpha1.KollectSnapshotSink{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git", Generation: 1},
			Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "git", SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "file://" + bare}}}
	}
	ctx := context.Background()
	mirrors := func() []string {
		t.Helper()
		var out []string
		entries, _ := os.ReadDir(state)
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(state, e.Name(), "objects")); err == nil {
				out = append(out, e.Name())
			}
		}
		return out
	}
	// A probe's backend, built as Registry.Probe builds it, is open when
	// the inventories' backends are built, as a new sink's probe may be.
	typ, err := registry.Type(sink("team-a"))
	if err != nil {
		t.Fatal(err)
	}
	probe, err := typ.Build(ctx, sink("team-a"), backends.Credentials{}, backends.Env{Policy: registry.Policy, Clients: registry.Clients})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"team-a", "team-b", "team-c"} {
		b := cache.Backend(ctx, nil, ns+"/inv|snapshot/git", sink(ns))
		snap := rows.NewSnapshot(rows.Identity{Namespace: ns, Name: "inv"}, nil, metav1.Now().Time)
		if _, err := b.Export(ctx, rows.Diff(nil, snap)); err != nil {
			t.Fatalf("%s: %v", ns, err)
		}
	}
	probe.(interface{ Close() }).Close()
	if _, reason, err := registry.Probe(ctx, nil, sink("team-b")); err != nil {
		t.Fatalf("probe: %s: %v", reason, err)
	}
	if got := mirrors(); len(got) != 1 {
		t.Fatalf("mirrors under the state directory: %v, want one", got)
	}
	cache.Forget("team-a/inv")
	cache.Forget("team-b/inv")
	if got := mirrors(); len(got) != 1 {
		t.Fatalf("mirrors while team-c's inventory uses it: %v, want one", got)
	}
	cache.Forget("team-c/inv")
	testenv.Eventually(t, 10*time.Second, "the mirror is removed with the last inventory", func() error {
		if got := mirrors(); len(got) > 0 {
			return fmt.Errorf("mirrors left: %v", got)
		}
		return nil
	})
}
