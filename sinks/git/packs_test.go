package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"kollect.dev/kollect/internal/eventually"
	"kollect.dev/kollect/model/rows"
)

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

// packCount is how many packs the mirror in dir holds, and how many
// loose objects.
func packCount(t *testing.T, dir string) (packs, loose int) {
	t.Helper()
	ps, err := listPacks(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := gitIn(t, dir, "count-objects", "-v")
	for _, line := range strings.Split(out, "\n") {
		if n, ok := strings.CutPrefix(line, "count: "); ok {
			loose, _ = strconv.Atoi(n)
		}
	}
	return len(ps), loose
}

// Every export stores what it pushed as one pack, and the packs merge as
// they come: forty exports leave no loose object and a handful of packs
// (sizes at least doubling), every one whole to git.
func TestExportsKeepTheMirrorsPacksFew(t *testing.T) {
	s, cfg, _ := newMirrorSink(t, 0)
	t.Cleanup(s.Close)
	ctx := context.Background()
	most := 0
	for i := range 40 {
		if _, err := s.Export(ctx, appRows(t, 50, fmt.Sprintf("app:%d", i))); err != nil {
			t.Fatal(err)
		}
		packs, loose := packCount(t, cfg.MirrorDir)
		if loose != 0 {
			t.Fatalf("export %d left %d loose objects", i, loose)
		}
		most = max(most, packs)
	}
	if most > 7 { // log2(40)+1
		t.Fatalf("the mirror held up to %d packs over 40 exports", most)
	}
	wholeMirror(t, cfg.MirrorDir)
	ps, err := listPacks(cfg.MirrorDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		gitIn(t, cfg.MirrorDir, "verify-pack", packPath(cfg.MirrorDir, p.hash, ".idx"))
	}
}

// What the sink superseded (its owned record before each create) is left
// out when its pack merges, and a pack that holds deltas (as git's own
// repack writes) is read but never merged.
func TestMergesLeaveOutTheDeadAndKeepDeltaPacks(t *testing.T) {
	s, cfg, _ := newMirrorSink(t, 0)
	t.Cleanup(s.Close)
	ctx := context.Background()
	// Large files alike, which git stores as deltas of one another.
	if _, err := s.Export(ctx, appRows(t, 200, strings.Repeat("registry.example/app:1 ", 100))); err != nil {
		t.Fatal(err)
	}
	// git's repack with a window makes deltas of the similar files.
	s.m.turn <- struct{}{}
	gitIn(t, cfg.MirrorDir, "repack", "-a", "-d", "-f", "--window=10", "-q")
	s.m.objs.Reindex()
	<-s.m.turn
	deltas, err := listPacks(cfg.MirrorDir)
	if err != nil || len(deltas) != 1 {
		t.Fatalf("git repack left %v (%v)", deltas, err)
	}
	if v := gitIn(t, cfg.MirrorDir, "verify-pack", "-v", packPath(cfg.MirrorDir, deltas[0].hash, ".idx")); !strings.Contains(v, "chain length") {
		t.Fatalf("git repack made no delta:\n%s", v)
	}
	var superseded []string
	for i := range 12 {
		before := s.ownedHead
		if _, err := s.Export(ctx, appRows(t, 201+i, strings.Repeat("registry.example/app:1 ", 100))); err != nil { // one create each
			t.Fatal(err)
		}
		if before.commit != plumbing.ZeroHash && before.commit != s.ownedHead.commit {
			superseded = append(superseded, before.commit.String())
		}
	}
	if len(superseded) < 10 {
		t.Fatalf("%d owned records superseded by 12 creates", len(superseded))
	}
	gone := 0
	for _, h := range superseded {
		if exec.Command("git", "--git-dir", cfg.MirrorDir, "cat-file", "-e", h).Run() != nil {
			gone++
		}
	}
	if gone < len(superseded)/2 {
		t.Fatalf("%d of %d superseded owned records left the mirror after 12 exports", gone, len(superseded))
	}
	if _, err := os.Stat(packPath(cfg.MirrorDir, deltas[0].hash, ".pack")); err != nil {
		t.Fatalf("the pack with deltas: %v", err)
	}
	if !s.m.unmergeable[deltas[0].hash] {
		t.Fatal("the pack with deltas was never offered to a merge")
	}
	wholeMirror(t, cfg.MirrorDir)
}

// The collection deletes packed objects no ref reaches, by merging their
// packs without them.
func TestACollectionDropsUnreachedPackedObjects(t *testing.T) {
	s, cfg, _ := newMirrorSink(t, 1000)
	t.Cleanup(s.Close)
	ctx := context.Background()
	if _, err := s.Export(ctx, appRows(t, 20, "app:1")); err != nil {
		t.Fatal(err)
	}
	// A blob no ref reaches, packed on its own (without deltas, as the
	// sink packs).
	file := filepath.Join(t.TempDir(), "stray")
	if err := os.WriteFile(file, []byte("nobody's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stray := gitIn(t, cfg.MirrorDir, "hash-object", "-w", file)
	pack := exec.Command("git", "pack-objects", "--window=0", "-q", filepath.Join(packDir, "pack"))
	pack.Dir, pack.Stdin = cfg.MirrorDir, strings.NewReader(stray+"\n")
	if out, err := pack.CombinedOutput(); err != nil {
		t.Fatalf("git pack-objects: %v\n%s", err, out)
	}
	gitIn(t, cfg.MirrorDir, "prune-packed")
	s.m.turn <- struct{}{}
	s.m.objs.Reindex()
	if err := s.m.objs.HasEncodedObject(plumbing.NewHash(stray)); err != nil {
		t.Fatalf("the stray blob, packed: %v", err)
	}
	err := s.collectGarbage()
	<-s.m.turn
	if err != nil {
		t.Fatal(err)
	}
	if exec.Command("git", "--git-dir", cfg.MirrorDir, "cat-file", "-e", stray).Run() == nil {
		t.Fatal("the stray blob outlived the collection")
	}
	if _, loose := packCount(t, cfg.MirrorDir); loose != 0 {
		t.Fatalf("%d loose objects after the collection", loose)
	}
	wholeMirror(t, cfg.MirrorDir)
	if _, err := s.Export(ctx, appRows(t, 20, "app:2")); err != nil {
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
	due := func() bool {
		s.m.turn <- struct{}{}
		defer func() { <-s.m.turn }()
		return s.m.collect != nil
	}
	if !due() {
		t.Fatal("no collection due after two pushes of a new mirror (or the export ran it)")
	}
	eventually.Check(t, 10*time.Second, "the collection due ran", func() error {
		if due() {
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

// A push the remote refuses leaves nothing in the mirror: the pack the
// mirror was storing as the push went is dropped with its file.
func TestARefusedPushLeavesNoPack(t *testing.T) {
	s, cfg, bare := newMirrorSink(t, 0)
	t.Cleanup(s.Close)
	ctx := context.Background()
	if _, err := s.Export(ctx, appRows(t, 20, "app:1")); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadDir(filepath.Join(cfg.MirrorDir, packDir))
	if err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(bare, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho refused >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Export(ctx, appRows(t, 20, "app:2")); err == nil {
		t.Fatal("an export the remote refused succeeded")
	}
	after, err := os.ReadDir(filepath.Join(cfg.MirrorDir, packDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		var names []string
		for _, de := range after {
			names = append(names, de.Name())
		}
		t.Fatalf("the mirror's pack directory went from %d to %d files after a refused push: %v", len(before), len(after), names)
	}
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Export(ctx, appRows(t, 20, "app:2")); err != nil {
		t.Fatalf("export once the remote accepts again: %v", err)
	}
	wholeMirror(t, cfg.MirrorDir)
}

// The merge due keeps pack sizes geometric: the smallest packs merge
// while the next is under twice their sum.
func TestMergeDueKeepsSizesGeometric(t *testing.T) {
	for _, tc := range []struct {
		sizes []int64 // smallest first
		want  int     // how many of the smallest merge
	}{
		{nil, 0},
		{[]int64{5}, 0},
		{[]int64{5, 5}, 2},
		{[]int64{5, 10}, 0},
		{[]int64{5, 9}, 2},
		{[]int64{5, 5, 10}, 3},
		{[]int64{5, 10, 20}, 0},
		{[]int64{1, 1, 1, 100}, 3},
		{[]int64{3, 4, 5, 30, 31}, 3},
	} {
		ps := make([]packFile, len(tc.sizes))
		for i, n := range tc.sizes {
			ps[i] = packFile{size: n}
		}
		if got := len(mergeDue(ps)); got != tc.want {
			t.Errorf("sizes %v: %d packs merge, want %d", tc.sizes, got, tc.want)
		}
	}
}

// A pack the sink writes is one git reads: every object, its index's
// offsets and CRC-32s (git verify-pack checks both), whatever the size
// (an empty blob, sizes that take one to three bytes to say).
func TestAPackTheSinkWritesIsGits(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "--bare", "-q", ".")
	src := memory.NewStorage()
	var hashes []plumbing.Hash
	for _, content := range []string{"", "short", strings.Repeat("x", 100), strings.Repeat("0123456789abcdef", 1000)} {
		o := src.NewEncodedObject()
		o.SetType(plumbing.BlobObject)
		w, err := o.Writer()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
		_ = w.Close()
		h, err := src.SetEncodedObject(o)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h, h) // twice: a pack holds it once
	}
	p, err := newPackInMirror(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.sum, p.idx, err = writePack(p.bw, src, hashes); err != nil {
		t.Fatal(err)
	}
	if err := p.keep(); err != nil {
		t.Fatal(err)
	}
	out := gitIn(t, dir, "verify-pack", "-v", packPath(dir, p.sum, ".idx"))
	if !strings.Contains(out, "non delta: 4 objects") {
		t.Fatalf("git verify-pack:\n%s", out)
	}
	for i := 0; i < len(hashes); i += 2 {
		gitIn(t, dir, "cat-file", "-e", hashes[i].String())
	}
	if got := gitIn(t, dir, "cat-file", "-p", hashes[2].String()); got != "short" {
		t.Fatalf("git reads %q", got)
	}
}

// A process killed while it wrote a pack leaves the file aside; the next
// one to open the mirror removes it.
func TestAMirrorOpenedDropsHalfWrittenPacks(t *testing.T) {
	s, cfg, _ := newMirrorSink(t, 0)
	if _, err := s.Export(context.Background(), appRows(t, 20, "app:1")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	torn := filepath.Join(cfg.MirrorDir, packDir, "tmp_pack_123")
	if err := os.WriteFile(torn, []byte("PACK"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(again.Close)
	if _, err := os.Stat(torn); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the half-written pack is still there: %v", err)
	}
	if _, err := again.Export(context.Background(), appRows(t, 20, "app:2")); err != nil {
		t.Fatal(err)
	}
	wholeMirror(t, cfg.MirrorDir)
}
