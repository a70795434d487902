package git_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/git"
)

func gitCmd(t *testing.T, dir string, args ...string) string {
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

// remote creates a bare repository whose main branch already holds a
// README that the sink must leave alone.
func remote(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bare := filepath.Join(dir, "remote.git")
	gitCmd(t, dir, "init", "--bare", "-b", "main", bare)
	work := filepath.Join(dir, "seed")
	gitCmd(t, dir, "clone", bare, work)
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("inventory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, work, "add", "README.md")
	gitCmd(t, work, "commit", "-m", "seed")
	gitCmd(t, work, "push", "origin", "HEAD:main")
	return bare
}

func row(t *testing.T, name, image string) *rows.Row {
	t.Helper()
	r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: "shop", Group: "apps", Version: "v1", Kind: "Deployment"}, Namespace: "demo", Name: name, UID: "uid-" + name}, rows.AttributesOf(map[string]any{"image": image, "replicas": 2}))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func snap(rs ...*rows.Row) *rows.Snapshot {
	return rows.NewSnapshot(rows.Identity{Namespace: "default", Name: "demo-inventory", Generation: 1}, rs, time.Now())
}

func TestPerResourceExportsAreOneCommitEachAndOnlyOnChange(t *testing.T) {
	bare := remote(t)
	s, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: t.TempDir(), Layout: git.Layout{
		Mode: "perResource", Content: "attributes", Format: "yaml", Cluster: "kollect-hero",
		ItemPath: "namespaces/{sourceNamespace}/{kind}/{sourceName}{extension}"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	commits := func() string { return gitCmd(t, bare, "rev-list", "--count", "main") }
	show := func(p string) string { return gitCmd(t, bare, "show", "main:"+p) }

	storefront, cart := row(t, "storefront", "shop:1.0"), row(t, "cart", "cart:1.0")
	ack, err := s.Export(ctx, snap(storefront, cart))
	if err != nil {
		t.Fatal(err)
	}
	if !ack.Changed || ack.Rows != 2 || commits() != "2" {
		t.Fatalf("first export: want one new commit holding 2 rows, got %+v and %s commits", ack, commits())
	}
	if got := show("namespaces/demo/deployment/storefront.yaml"); got != "image: shop:1.0\nreplicas: 2" {
		t.Errorf("storefront file:\n%s", got)
	}
	subject := gitCmd(t, bare, "log", "-1", "--format=%s|%an <%ae>", "main")
	if !strings.HasPrefix(subject, "chore(kollect-hero/default/demo-inventory): export 2 items @ ") || !strings.HasSuffix(subject, "|kollect <kollect@kollect.dev>") {
		t.Errorf("commit subject/author: %s", subject)
	}

	// The same content again: no commit.
	if ack, err = s.Export(ctx, snap(storefront, cart)); err != nil || ack.Changed || commits() != "2" {
		t.Fatalf("unchanged export: want no commit, got %+v %v and %s commits", ack, err, commits())
	}

	// An image change: one commit whose diff is that line.
	if _, err = s.Export(ctx, snap(row(t, "storefront", "shop:1.1"), cart)); err != nil {
		t.Fatal(err)
	}
	diff := gitCmd(t, bare, "diff", "--unified=0", "main~1", "main")
	if commits() != "3" || !strings.Contains(diff, "-image: shop:1.0") || !strings.Contains(diff, "+image: shop:1.1") || strings.Count(diff, "\n+") != 2 {
		t.Fatalf("image change: want one commit changing one line, got %s commits:\n%s", commits(), diff)
	}

	// A deleted Deployment: its file is removed, the others stay.
	if _, err = s.Export(ctx, snap(cart)); err != nil {
		t.Fatal(err)
	}
	files := gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main")
	if files != "README.md\nnamespaces/demo/deployment/cart.yaml" {
		t.Fatalf("after delete, files:\n%s", files)
	}

	// An empty snapshot removes everything the sink wrote, nothing else.
	if _, err = s.Export(ctx, snap()); err != nil {
		t.Fatal(err)
	}
	if files := gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main"); files != "README.md" {
		t.Fatalf("after empty snapshot, files:\n%s", files)
	}
}

func TestDocumentModeWritesTheEnvelopeAndSurvivesForeignCommits(t *testing.T) {
	bare := remote(t)
	s, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: t.TempDir(), Layout: git.Layout{Format: "json"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first := snap(row(t, "a", "x:1"))
	if _, err := s.Export(ctx, first); err != nil {
		t.Fatal(err)
	}
	doc := gitCmd(t, bare, "show", "main:inventory/default/demo-inventory.json")
	if doc != string(first.Envelope("")) {
		t.Fatalf("document is not the envelope:\n%s", doc)
	}
	// Someone else pushes in between; the next export builds on their commit.
	work := filepath.Join(t.TempDir(), "other")
	gitCmd(t, filepath.Dir(work), "clone", bare, work)
	if err := os.WriteFile(filepath.Join(work, "NOTES.md"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, work, "add", "NOTES.md")
	gitCmd(t, work, "commit", "-m", "notes")
	gitCmd(t, work, "push", "origin", "HEAD:main")
	if _, err := s.Export(ctx, snap(row(t, "a", "x:2"))); err != nil {
		t.Fatal(err)
	}
	if files := gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main"); files != "NOTES.md\nREADME.md\ninventory/default/demo-inventory.json" {
		t.Fatalf("foreign file lost or document missing:\n%s", files)
	}
}

func TestProbe(t *testing.T) {
	ctx := context.Background()
	if err := git.Probe(ctx, git.Config{URL: "file://" + remote(t)}); err != nil {
		t.Errorf("a reachable remote: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.git")
	gitCmd(t, filepath.Dir(empty), "init", "--bare", empty)
	if err := git.Probe(ctx, git.Config{URL: "file://" + empty}); err != nil {
		t.Errorf("an empty remote is reachable: %v", err)
	}
	err := git.Probe(ctx, git.Config{URL: "file://" + filepath.Join(t.TempDir(), "missing.git")})
	if err == nil || !strings.Contains(err.Error(), "ls-remote") {
		t.Errorf("a missing remote: want an ls-remote error, got %v", err)
	}
}

func TestSplitWritesAnIndexAndCommitsCarryBodyAndTrailers(t *testing.T) {
	bare := remote(t)
	s, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: t.TempDir(),
		CommitBody: "{itemCount} items from {cluster}", Trailers: []string{"Kollect-Checksum: {checksum}", " "},
		Layout: git.Layout{Mode: "perResource", Index: true, Format: "json", Cluster: "c1"}})
	if err != nil {
		t.Fatal(err)
	}
	a := row(t, "a", "x:1")
	snapshot := snap(a, row(t, "b", "y:1"))
	if _, err := s.Export(context.Background(), snapshot); err != nil {
		t.Fatal(err)
	}
	files := gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main")
	if files != "README.md\nc1/demo/deployment/a.json\nc1/demo/deployment/b.json\ninventory/default/demo-inventory.json" {
		t.Fatalf("files:\n%s", files)
	}
	index := gitCmd(t, bare, "show", "main:inventory/default/demo-inventory.json")
	for _, want := range []string{`"itemCount": 2`, `"cluster": "c1"`, `"c1/demo/deployment/a.json"`, `"checksum": "` + snapshot.Checksum + `"`} {
		if !strings.Contains(index, want) {
			t.Errorf("index lacks %s:\n%s", want, index)
		}
	}
	msg := gitCmd(t, bare, "log", "-1", "--format=%B", "main")
	if !strings.Contains(msg, "\n\n2 items from c1\n\nKollect-Checksum: "+snapshot.Checksum) {
		t.Errorf("commit message:\n%s", msg)
	}

	// The next export keeps a, replaces b and adds c: the index, built
	// from the rows that changed and the files of those that did not,
	// lists all three in order.
	if _, err := s.Export(context.Background(), snap(a, row(t, "b", "y:2"), row(t, "c", "z:1"))); err != nil {
		t.Fatal(err)
	}
	index = gitCmd(t, bare, "show", "main:inventory/default/demo-inventory.json")
	ia, ib, ic := strings.Index(index, `"c1/demo/deployment/a.json"`), strings.Index(index, `"c1/demo/deployment/b.json"`),
		strings.Index(index, `"c1/demo/deployment/c.json"`)
	if !strings.Contains(index, `"itemCount": 3`) || ia < 0 || ib < ia || ic < ib {
		t.Errorf("the second index lacks the three paths in order:\n%s", index)
	}
}

func TestRowsOfAResourceProfileBecomeAManifestTree(t *testing.T) {
	bare := remote(t)
	s, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: t.TempDir(), Layout: git.Layout{Cluster: "prod-west"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: "t", Group: "apps", Version: "v1", Kind: "Deployment"}, Namespace: "apps", Name: "api", UID: "u"}, rows.AttributesOf(map[string]any{"containerCount": 1,
		"resource": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{"replicas": 2}}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Export(context.Background(), snap(r)); err != nil {
		t.Fatal(err)
	}
	if got := gitCmd(t, bare, "show", "main:prod-west/apps/deployment/api.yaml"); got != "apiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: 2" {
		t.Fatalf("manifest file:\n%s", got)
	}
}

// TestARestartedSinkStillRemovesFilesOfRowsDeletedMeanwhile: a fresh Sink
// (as after an operator restart) must remove the file of a row that
// disappeared while it was down, and leave foreign files alone.
func TestARestartedSinkStillRemovesFilesOfRowsDeletedMeanwhile(t *testing.T) {
	bare := remote(t)
	cfg := git.Config{URL: "file://" + bare, Layout: git.Layout{Mode: "perResource", Content: "attributes",
		ItemPath: "namespaces/{sourceNamespace}/{kind}/{sourceName}{extension}"}}
	first, err := openSink(t, withMirror(cfg, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Export(context.Background(), snap(row(t, "a", "x:1"), row(t, "b", "x:1"))); err != nil {
		t.Fatal(err)
	}
	restarted, err := openSink(t, withMirror(cfg, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restarted.Export(context.Background(), snap(row(t, "a", "x:1"))); err != nil {
		t.Fatal(err)
	}
	if files := gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main"); files != "README.md\nnamespaces/demo/deployment/a.yaml" {
		t.Fatalf("after a restart, files:\n%s", files)
	}
}

func withMirror(c git.Config, dir string) git.Config { c.MirrorDir = dir; return c }

// openSink is git.New for a test: the sink closes when the test ends, so
// its mirror's writer stops before the test's directories go.
func openSink(tb testing.TB, cfg git.Config) (*git.Sink, error) {
	s, err := git.New(cfg)
	if err == nil {
		tb.Cleanup(s.Close)
	}
	return s, err
}

// TestInventoriesSharingARepositoryKeepEachOthersFiles: two inventories of
// one cluster write the default item tree of one repository. Neither
// removes the other's files, while both run (the remote moves under each)
// nor after a restart, and a restarted sink still removes the files of its
// own rows deleted meanwhile (its list of owned files is kept in the
// remote, outside the branch).
func TestInventoriesSharingARepositoryKeepEachOthersFiles(t *testing.T) {
	bare := remote(t)
	cfg := git.Config{URL: "file://" + bare, Layout: git.Layout{Mode: "perResource", Content: "attributes", Cluster: "east"}}
	ctx := context.Background()
	inv := func(name string, rs ...*rows.Row) *rows.Snapshot {
		return rows.NewSnapshot(rows.Identity{Namespace: name, Name: "inventory", Generation: 1}, rs, time.Now())
	}
	mk := func() *git.Sink {
		s, err := openSink(t, withMirror(cfg, t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	export := func(s *git.Sink, snap *rows.Snapshot) {
		t.Helper()
		if _, err := s.Export(ctx, snap); err != nil {
			t.Fatal(err)
		}
	}
	files := func() string { return gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main") }
	a, b := mk(), mk()
	export(a, inv("team-a", row(t, "a1", "x:1")))
	export(b, inv("team-b", row(t, "b1", "x:1")))
	export(a, inv("team-a", row(t, "a1", "x:1"), row(t, "a2", "x:1")))
	want := "README.md\neast/demo/deployment/a1.yaml\neast/demo/deployment/a2.yaml\neast/demo/deployment/b1.yaml"
	if got := files(); got != want {
		t.Fatalf("while both run, files:\n%s\nwant:\n%s", got, want)
	}
	restarted := mk()
	export(restarted, inv("team-a", row(t, "a2", "x:1")))
	want = "README.md\neast/demo/deployment/a2.yaml\neast/demo/deployment/b1.yaml"
	if got := files(); got != want {
		t.Fatalf("after a restart, files:\n%s\nwant:\n%s", got, want)
	}
	if refs := gitCmd(t, bare, "for-each-ref", "--format=%(refname)", "refs/kollect/"); refs != "refs/kollect/owned/east/team-a/inventory\nrefs/kollect/owned/east/team-b/inventory" {
		t.Fatalf("owned refs: %s", refs)
	}
}

func TestLayoutPathsStayOutOfGitAndCIFolders(t *testing.T) {
	for _, tmpl := range []string{".github/workflows/{sourceName}{extension}", "x/.git/{sourceName}{extension}", ".gitlab-ci.yml/{sourceName}"} {
		s, err := openSink(t, git.Config{URL: "file://" + remote(t), MirrorDir: t.TempDir(), Layout: git.Layout{Mode: "perResource", ItemPath: tmpl}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Export(context.Background(), snap(row(t, "a", "x:1"))); err == nil || !strings.Contains(err.Error(), "layout path") {
			t.Errorf("%s: want a refusal, got %v", tmpl, err)
		}
	}
}

// Only a document layout's export depends on how a ceiling splits the
// snapshot; a file per row, set or detected from a Resource-export
// profile, is the same files whatever the parts.
func TestOnlyDocumentsWantParts(t *testing.T) {
	plain := row(t, "a", "x:1")
	manifest, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: "t", Group: "apps", Version: "v1", Kind: "Deployment"}, Namespace: "apps", Name: "api", UID: "u"}, rows.AttributesOf(map[string]any{"resource": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		layout git.Layout
		row    *rows.Row
		want   bool
	}{
		{"document", git.Layout{}, plain, true},
		{"perResource", git.Layout{Mode: "perResource"}, plain, false},
		{"split index", git.Layout{Mode: "perResource", Index: true}, plain, false},
		{"manifests detected", git.Layout{}, manifest, false},
	} {
		s, err := openSink(t, git.Config{URL: "file://" + remote(t), MirrorDir: t.TempDir(), Layout: tc.layout})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.WantsParts(snap(tc.row)); got != tc.want {
			t.Errorf("%s: wants parts %v, want %v", tc.name, got, tc.want)
		}
	}
}
