package git_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/git"
)

// ownedRecord lists the paths a sink's record of owned files names.
func ownedRecord(t *testing.T, bare, ref string) []string {
	t.Helper()
	var out []string
	for _, entry := range strings.Fields(gitCmd(t, bare, "ls-tree", "-r", "--name-only", ref+":files")) {
		_, name, _ := strings.Cut(entry, "/")
		p, err := url.PathUnescape(name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// objectsIn counts the objects a bare repository holds, loose and packed.
func objectsIn(t *testing.T, bare string) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(gitCmd(t, bare, "count-objects", "-v"), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		if k == "count" || k == "in-pack" {
			c, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			n += c
		}
	}
	return n
}

// TestAnExportSendsOnlyWhatChanged: one row changed among 300 sends its
// file, the trees above it and the commit, whatever the size of the tree.
func TestAnExportSendsOnlyWhatChanged(t *testing.T) {
	bare := remote(t)
	s, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: t.TempDir(), Layout: git.Layout{Mode: "perResource", Content: "attributes"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rs := make([]*rows.Row, 300)
	for i := range rs {
		rs[i] = row(t, fmt.Sprintf("app-%03d", i), "x:1")
	}
	if _, err := s.Export(ctx, snap(append([]*rows.Row(nil), rs...)...)); err != nil {
		t.Fatal(err)
	}
	before := objectsIn(t, bare)
	next := append([]*rows.Row(nil), rs...)
	next[7] = row(t, "app-007", "x:2")
	ack, err := s.Export(ctx, snap(next...))
	if err != nil || !ack.Changed || ack.Written != 1 {
		t.Fatalf("export: %v %+v", err, ack)
	}
	changed := gitCmd(t, bare, "diff", "--name-only", "main~1", "main")
	if changed != "default/demo/deployment/app-007.yaml" {
		t.Fatalf("the commit changed %q", changed)
	}
	// The file, a tree for the root and each of its three directories,
	// and the commit.
	if sent := objectsIn(t, bare) - before; sent != 1+4+1 {
		t.Errorf("the remote received %d objects, want 6", sent)
	}
	if got := gitCmd(t, bare, "show", "main:"+changed); !strings.Contains(got, "x:2") {
		t.Errorf("the file holds %q", got)
	}
	if out := gitCmd(t, bare, "fsck", "--no-progress", "--connectivity-only"); strings.Contains(out, "missing") {
		t.Errorf("fsck: %s", out)
	}

	// A new row also changes the record of owned files, by its bucket
	// only: the same six objects on the branch, and on the record the
	// bucket's tree, files/, the record's root and its commit (and the
	// empty file, which the remote may count twice).
	before = objectsIn(t, bare)
	if _, err := s.Export(ctx, snap(append(next, row(t, "zz-new", "x:3"))...)); err != nil {
		t.Fatal(err)
	}
	if sent := objectsIn(t, bare) - before; sent < 10 || sent > 11 {
		t.Errorf("the remote received %d objects for one new row, want 10", sent)
	}
	owned := ownedRecord(t, bare, "refs/kollect/owned/default/default/demo-inventory")
	if n := len(owned); n != 301 || !slices.Contains(owned, "default/demo/deployment/zz-new.yaml") {
		t.Errorf("the owned record lists %d files", n)
	}
}

// TestAnEarlierVersionsOwnedListIsReadAndReplaced: a record in the one-file
// format of earlier versions is read (the restarted sink removes the file
// of a row deleted meanwhile) and replaced by the tree, whose owned file is
// empty, so an earlier version reading it after a downgrade removes
// nothing.
func TestAnEarlierVersionsOwnedListIsReadAndReplaced(t *testing.T) {
	bare := remote(t)
	cfg := git.Config{URL: "file://" + bare, Layout: git.Layout{Mode: "perResource", Content: "attributes"}}
	ctx := context.Background()
	first, err := openSink(t, withMirror(cfg, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	a, b := row(t, "a", "x:1"), row(t, "b", "x:1")
	if _, err := first.Export(ctx, snap(a, b)); err != nil {
		t.Fatal(err)
	}
	// Write the record as an earlier version did: one file listing paths.
	ref := "refs/kollect/owned/default/default/demo-inventory"
	work := t.TempDir()
	gitCmd(t, work, "init", "-q")
	list := filepath.Join(work, "owned")
	if err := os.WriteFile(list, []byte("default/demo/deployment/a.yaml\ndefault/demo/deployment/b.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	blob := gitCmd(t, bare, "hash-object", "-w", list)
	cmd := exec.Command("git", "mktree")
	cmd.Dir, cmd.Stdin = bare, strings.NewReader("100644 blob "+blob+"\towned\n")
	tree, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	commit := gitCmd(t, bare, "commit-tree", strings.TrimSpace(string(tree)), "-m", "owned")
	gitCmd(t, bare, "update-ref", ref, commit)

	restarted, err := openSink(t, withMirror(cfg, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restarted.Export(ctx, snap(a)); err != nil {
		t.Fatal(err)
	}
	if files := gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main"); files != "README.md\ndefault/demo/deployment/a.yaml" {
		t.Fatalf("files:\n%s", files)
	}
	if got := ownedRecord(t, bare, ref); !slices.Equal(got, []string{"default/demo/deployment/a.yaml"}) {
		t.Errorf("the record lists %q", got)
	}
	if got := gitCmd(t, bare, "cat-file", "-s", ref+":owned"); got != "0" {
		t.Errorf("the record's owned file has %s bytes, want 0", got)
	}
}

// TestARefusedPushLeavesTheSinkAsItWas: an export the remote refuses
// changes nothing the sink remembers, so the next export starts from what
// the remote holds (the row removed and the row changed in the refused
// export are still removed and changed once it lands).
func TestARefusedPushLeavesTheSinkAsItWas(t *testing.T) {
	bare := remote(t)
	s, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: t.TempDir(), Layout: git.Layout{Mode: "perResource", Content: "attributes"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	files := func() string { return gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main") }
	a, b := row(t, "a", "x:1"), row(t, "b", "x:1")
	if _, err := s.Export(ctx, snap(a, b)); err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(bare, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho refused >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	a2, c := row(t, "a", "x:2"), row(t, "c", "x:1")
	if _, err := s.Export(ctx, snap(a2, c)); err == nil {
		t.Fatal("the remote refused the push, but the export succeeded")
	}
	if got := files(); got != "README.md\ndefault/demo/deployment/a.yaml\ndefault/demo/deployment/b.yaml" {
		t.Fatalf("after the refused push, files:\n%s", got)
	}
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}
	d := row(t, "d", "x:1")
	for _, want := range []struct {
		snap  *rows.Snapshot
		files string
	}{
		{snap(a2, c), "README.md\ndefault/demo/deployment/a.yaml\ndefault/demo/deployment/c.yaml"},
		{snap(a2, c, d), "README.md\ndefault/demo/deployment/a.yaml\ndefault/demo/deployment/c.yaml\ndefault/demo/deployment/d.yaml"},
	} {
		if _, err := s.Export(ctx, want.snap); err != nil {
			t.Fatal(err)
		}
		if got := files(); got != want.files {
			t.Fatalf("files:\n%s\nwant:\n%s", got, want.files)
		}
	}
	if got := gitCmd(t, bare, "show", "main:default/demo/deployment/a.yaml"); !strings.Contains(got, "x:2") {
		t.Errorf("a.yaml holds %q", got)
	}
	// The owned list follows too: a restarted sink removes d's file when d
	// is gone.
	restarted, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: t.TempDir(), Layout: git.Layout{Mode: "perResource", Content: "attributes"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restarted.Export(ctx, snap(a2, c)); err != nil {
		t.Fatal(err)
	}
	if got := files(); got != "README.md\ndefault/demo/deployment/a.yaml\ndefault/demo/deployment/c.yaml" {
		t.Errorf("after a restart, files:\n%s", got)
	}
}

// TestALargeExportIsStoredAsThePackItPushed: an export of more than 4,096
// objects goes to the mirror as one pack, the one the push sent, and the
// next export reads the tree back from it.
func TestALargeExportIsStoredAsThePackItPushed(t *testing.T) {
	bare, mirror := remote(t), t.TempDir()
	s, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: mirror, Layout: git.Layout{Mode: "perResource", Content: "attributes"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rs := make([]*rows.Row, 5000)
	for i := range rs {
		rs[i] = row(t, fmt.Sprintf("app-%05d", i), fmt.Sprintf("x:%d", i)) // distinct files
	}
	if _, err := s.Export(ctx, snap(append([]*rows.Row(nil), rs...)...)); err != nil {
		t.Fatal(err)
	}
	// The pack fetched with the remote's first commit, and the export's.
	packs, err := filepath.Glob(filepath.Join(mirror, "objects", "pack", "*.pack"))
	if err != nil || len(packs) != 2 {
		t.Fatalf("the mirror holds packs %v (%v), want two", packs, err)
	}
	loose, err := filepath.Glob(filepath.Join(mirror, "objects", "??", "*"))
	if err != nil || len(loose) != 0 {
		t.Fatalf("the mirror holds %d loose objects (%v), want none", len(loose), err)
	}
	next := append([]*rows.Row(nil), rs...)
	next[5] = row(t, "app-00005", "x:changed")
	if ack, err := s.Export(ctx, snap(next...)); err != nil || ack.Written != 1 {
		t.Fatalf("export: %v %+v", err, ack)
	}
	if got := gitCmd(t, bare, "show", "main:default/demo/deployment/app-00005.yaml"); !strings.Contains(got, "x:changed") {
		t.Errorf("the file holds %q", got)
	}
	if n := strings.Count(gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main"), "\n") + 1; n != 5001 {
		t.Errorf("the branch holds %d files, want 5,001", n)
	}
}
