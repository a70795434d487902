package git

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"kollect.dev/kollect/internal/eventually"
	"kollect.dev/kollect/model/rows"
)

// stopWriter stops the mirror's writer, so what exports push stays
// pending until an export must write it itself.
func stopWriter(m *mirror) {
	close(m.stop)
	<-m.stopped
}

func pendingCount(m *mirror) int {
	m.objs.mu.Lock()
	defer m.objs.mu.Unlock()
	return len(m.objs.pending)
}

// appRows is n rows of distinct content in ten namespaces.
func appRows(t *testing.T, n int, image string) *rows.Snapshot {
	t.Helper()
	rs := make([]*rows.Row, n)
	for i := range rs {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "team", TargetName: "apps", Group: "apps", Version: "v1", Kind: "Deployment"},
			Namespace: fmt.Sprintf("ns-%d", i%10), Name: fmt.Sprintf("app-%04d", i), UID: fmt.Sprintf("uid-%04d", i)},
			rows.AttributesOf(map[string]any{"image": fmt.Sprintf("%s-%d", image, i)}))
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = r
	}
	return rows.NewSnapshot(rows.Identity{Namespace: "team", Name: "inv"}, rs, time.Unix(1700000000, 0))
}

// wholeMirror fails unless every ref of the mirror in dir reaches only
// objects on its disk.
func wholeMirror(t *testing.T, dir string) {
	t.Helper()
	if out := gitIn(t, dir, "fsck", "--connectivity-only", "--no-progress"); strings.Contains(out, "missing") || strings.Contains(out, "broken") {
		t.Fatalf("git fsck of the mirror: %s", out)
	}
}

// newMirrorSink is a perResource sink of a new bare repository, with its
// mirror in a directory of its own; the test closes it.
func newMirrorSink(t *testing.T, gcEvery int) (*Sink, Config, string) {
	t.Helper()
	dir := t.TempDir()
	bare := filepath.Join(dir, "remote.git")
	gitIn(t, dir, "init", "--bare", "-q", "-b", "main", bare)
	cfg := Config{URL: "file://" + bare, MirrorDir: filepath.Join(dir, "mirror"), GCEvery: gcEvery, Layout: Layout{Mode: "perResource", Content: "attributes"}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, cfg, bare
}

// A process killed while its mirror's objects were still pending left
// refs naming commits the disk never got. The next process on that
// directory drops those refs before anything reads them, fetches, and
// exports on; its mirror is whole again.
func TestAMirrorKilledWithObjectsPendingRefetches(t *testing.T) {
	killed, cfg, bare := newMirrorSink(t, 0)
	stopWriter(killed.m)
	ctx := context.Background()
	for _, image := range []string{"app:1", "app:2"} {
		if _, err := killed.Export(ctx, appRows(t, 20, image)); err != nil {
			t.Fatal(err)
		}
	}
	if pendingCount(killed.m) == 0 {
		t.Fatal("no object pending after two exports with the writer stopped")
	}
	if _, err := os.Stat(filepath.Join(cfg.MirrorDir, pendingMarker)); err != nil {
		t.Fatalf("the marker of pending objects: %v", err)
	}
	// killed is never closed: its process is gone.

	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	wholeMirror(t, cfg.MirrorDir) // before any fetch: no ref left that the disk cannot follow
	if _, err := s.Export(ctx, appRows(t, 20, "app:3")); err != nil {
		t.Fatalf("export after the kill: %v", err)
	}
	if got := gitIn(t, bare, "show", "main:default/ns-3/deployment/app-0003.yaml"); !strings.Contains(got, "app:3-3") {
		t.Fatalf("the remote holds %q", got)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(cfg.MirrorDir, pendingMarker)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the marker outlived a closed sink: %v", err)
	}
	wholeMirror(t, cfg.MirrorDir)
}

// An export starts by storing what the last one left pending: with the
// writer stopped, every object of the first export is on disk once the
// second returns, and only the second's are pending.
func TestAnExportStartsOnceTheLastOnesObjectsAreStored(t *testing.T) {
	s, cfg, _ := newMirrorSink(t, 0)
	stopWriter(s.m)
	ctx := context.Background()
	if _, err := s.Export(ctx, appRows(t, 100, "app:1")); err != nil {
		t.Fatal(err)
	}
	s.m.objs.mu.Lock()
	first := slices.Collect(maps.Keys(s.m.objs.pending))
	s.m.objs.mu.Unlock()
	if len(first) < 100 {
		t.Fatalf("%d objects pending after an export of 100 new files", len(first))
	}
	if _, err := s.Export(ctx, appRows(t, 100, "app:2")); err != nil {
		t.Fatal(err)
	}
	for _, h := range first {
		if _, ok := s.m.objs.lookup(h); ok {
			t.Fatalf("%s of the first export is still pending after the second", h)
		}
		if err := s.m.objs.Storage.HasEncodedObject(h); err != nil {
			t.Fatalf("%s of the first export is not on disk after the second: %v", h, err)
		}
	}
	if pendingCount(s.m) == 0 {
		t.Fatal("nothing of the second export pending with the writer stopped")
	}
	if err := s.m.objs.writeAll(); err != nil {
		t.Fatal(err)
	}
	wholeMirror(t, cfg.MirrorDir)
}

// A collection of garbage that falls due waits for the exports to pause:
// the export that made it due returns without it, and the writer runs it
// once no export came for gcIdle.
func TestACollectionWaitsForTheExportsToPause(t *testing.T) {
	s, cfg, _ := newMirrorSink(t, 2)
	t.Cleanup(s.Close)
	ctx := context.Background()
	for _, image := range []string{"app:1", "app:2"} {
		if _, err := s.Export(ctx, appRows(t, 20, image)); err != nil {
			t.Fatal(err)
		}
	}
	if !s.m.gcDue.Load() {
		t.Fatal("no collection due after two pushes of a new mirror (or the export ran it)")
	}
	eventually.Check(t, 10*time.Second, "the collection due ran", func() error {
		if s.m.gcDue.Load() {
			return errors.New("still due")
		}
		return nil
	})
	s.m.turn <- struct{}{}
	dirty := s.m.dirty
	<-s.m.turn
	if dirty {
		t.Fatal("the mirror is still marked dirty after its collection")
	}
	wholeMirror(t, cfg.MirrorDir)
}
