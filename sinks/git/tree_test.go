package git

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"

	"kollect.dev/kollect/model/rows"
)

// treeFiles lists every file of the tree at h as "path hash".
func treeFiles(t *testing.T, st *memory.Storage, h plumbing.Hash) []string {
	t.Helper()
	var out []string
	e := newTreeEdit(st, &dir{hash: h})
	if err := e.files("", true, func(p string) {
		en, _, err := e.get(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p+" "+en.Hash.String()[:7])
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestATreeEditChangesOnlyItsCopy(t *testing.T) {
	st := memory.NewStorage()
	blob := func(s string) plumbing.Hash { return plumbing.ComputeHash(plumbing.BlobObject, []byte(s)) }
	type op struct {
		path string
		blob string // "" removes
	}
	apply := func(t *testing.T, root *dir, ops []op) (*treeEdit, plumbing.Hash) {
		t.Helper()
		e := newTreeEdit(st, root)
		for _, o := range ops {
			var err error
			if o.blob == "" {
				err = e.remove(o.path)
			} else {
				err = e.set(o.path, blob(o.blob))
			}
			if err != nil {
				t.Fatalf("%s: %v", o.path, err)
			}
		}
		h, err := e.write()
		if err != nil {
			t.Fatal(err)
		}
		return e, h
	}
	base := []op{{"a/x/1.yaml", "1"}, {"a/x/2.yaml", "2"}, {"a/y/3.yaml", "3"}, {"b.yaml", "b"}, {"a.b/4.yaml", "4"}}
	_, baseHash := apply(t, &dir{read: true}, base)
	want0 := treeFiles(t, st, baseHash)

	cases := []struct {
		name    string
		ops     []op
		want    []string // files after, as path=blob
		changed int
		trees   int // tree objects written
	}{
		{"one file changed rewrites its directories only", []op{{"a/x/1.yaml", "1b"}},
			[]string{"a.b/4.yaml=4", "a/x/1.yaml=1b", "a/x/2.yaml=2", "a/y/3.yaml=3", "b.yaml=b"}, 1, 3},
		{"the same content changes nothing", []op{{"a/x/1.yaml", "1"}, {"b.yaml", "b"}},
			[]string{"a.b/4.yaml=4", "a/x/1.yaml=1", "a/x/2.yaml=2", "a/y/3.yaml=3", "b.yaml=b"}, 0, 0},
		{"a directory left empty goes", []op{{"a/y/3.yaml", ""}},
			[]string{"a.b/4.yaml=4", "a/x/1.yaml=1", "a/x/2.yaml=2", "b.yaml=b"}, 1, 2},
		{"new directories are made", []op{{"c/d/e/5.yaml", "5"}},
			[]string{"a.b/4.yaml=4", "a/x/1.yaml=1", "a/x/2.yaml=2", "a/y/3.yaml=3", "b.yaml=b", "c/d/e/5.yaml=5"}, 1, 4},
		{"removing a missing file changes nothing", []op{{"a/z/9.yaml", ""}, {"nope.yaml", ""}},
			[]string{"a.b/4.yaml=4", "a/x/1.yaml=1", "a/x/2.yaml=2", "a/y/3.yaml=3", "b.yaml=b"}, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := &dir{hash: baseHash}
			e, h := apply(t, root, tc.ops)
			var want []string
			for _, w := range tc.want {
				p, b, _ := strings.Cut(w, "=")
				want = append(want, p+" "+blob(b).String()[:7])
			}
			if got := treeFiles(t, st, h); !slices.Equal(got, want) {
				t.Errorf("files:\n got %v\nwant %v", got, want)
			}
			if e.changed != tc.changed || len(e.trees) != tc.trees {
				t.Errorf("changed %d files and wrote %d trees, want %d and %d", e.changed, len(e.trees), tc.changed, tc.trees)
			}
			if tc.changed == 0 && h != baseHash {
				t.Errorf("an edit that changed nothing has root %s, want %s", h, baseHash)
			}
			// The tree the edit started from is as it was.
			if root.hash != baseHash || !slices.Equal(treeFiles(t, st, baseHash), want0) {
				t.Errorf("the base tree changed")
			}
		})
	}

	t.Run("a directory's own files, the root named as path.Dir names it", func(t *testing.T) {
		for prefix, want := range map[string][]string{".": {"b.yaml"}, "": {"b.yaml"}, "a/x": {"a/x/1.yaml", "a/x/2.yaml"}} {
			var got []string
			if err := newTreeEdit(st, &dir{hash: baseHash}).files(prefix, false, func(p string) { got = append(got, p) }); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("files(%q): %v, want %v", prefix, got, want)
			}
		}
	})

	t.Run("a file where a directory is, and the reverse, is refused", func(t *testing.T) {
		e := newTreeEdit(st, &dir{hash: baseHash})
		if err := e.set("b.yaml/5.yaml", blob("5")); err == nil || !strings.Contains(err.Error(), "collision") {
			t.Errorf("file under a file: %v", err)
		}
		if err := e.set("a/x", blob("5")); err == nil || !strings.Contains(err.Error(), "collision") {
			t.Errorf("file over a directory: %v", err)
		}
	})
}

// Git must read the trees the edit writes as it writes its own: the same
// files give the same root as git's write-tree.
func TestATreeEditWritesWhatGitWrites(t *testing.T) {
	work := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", work).CombinedOutput(); err != nil {
		t.Fatal(string(out))
	}
	mirror, err := New(Config{URL: "file://" + filepath.Join(work, ".git"), MirrorDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	mirror.stage = newStage(mirror.m)
	e := newTreeEdit(mirror.stage, &dir{read: true})
	// Names whose order differs between plain byte order and Git's
	// (a directory sorts as if it ended in "/").
	names := []string{"a-b/1.yaml", "a/2.yaml", "a.yaml", "a0/3.yaml", "ab", "a/b/c/4.yaml", "z.yaml"}
	for i, n := range names {
		content := fmt.Sprintf("file %d\n", i)
		h, err := mirror.blob([]byte(content))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.set(n, h); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("git", "update-index", "--add", "--cacheinfo", "100644,"+h.String()+","+n)
		cmd.Dir = work
		// git reads the blob from its own object store: give it one.
		hash := exec.Command("git", "hash-object", "-w", "--stdin")
		hash.Dir, hash.Stdin = work, strings.NewReader(content)
		if out, err := hash.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != h.String() {
			t.Fatalf("hash-object: %v %s (want %s)", err, out, h)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatal(string(out))
		}
	}
	got, err := e.write()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "write-tree")
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatal(string(out))
	}
	if want := strings.TrimSpace(string(out)); got.String() != want {
		t.Errorf("root %s, git's write-tree %s", got, want)
	}
}

func TestPairFindsWhatStayedLeftAndArrived(t *testing.T) {
	mk := func(name, image string) *rows.Row {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{Version: "v1", Kind: "ConfigMap"}, Namespace: "ns", Name: name, UID: name}, rows.AttributesOf(map[string]any{"image": image}))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b, c, d := mk("a", "1"), mk("b", "1"), mk("c", "1"), mk("d", "1")
	b2 := mk("b", "2")
	cases := []struct {
		name       string
		prev, next []*rows.Row
		gone, came []*rows.Row
	}{
		{"nothing changed", []*rows.Row{a, b, c}, []*rows.Row{a, b, c}, nil, nil},
		{"one replaced", []*rows.Row{a, b, c}, []*rows.Row{a, b2, c}, []*rows.Row{b}, []*rows.Row{b2}},
		{"added in the middle and at the end", []*rows.Row{a, c}, []*rows.Row{a, b, c, d}, nil, []*rows.Row{b, d}},
		{"removed at both ends", []*rows.Row{a, b, c, d}, []*rows.Row{b, c}, []*rows.Row{a, d}, nil},
		{"all new", nil, []*rows.Row{a, b}, nil, []*rows.Row{a, b}},
		{"all gone", []*rows.Row{a, b}, nil, []*rows.Row{a, b}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			same, goneAt := pair(tc.prev, tc.next)
			if len(same) != len(tc.next) {
				t.Fatalf("%d pairings for %d rows", len(same), len(tc.next))
			}
			var gone, came []*rows.Row
			for _, i := range goneAt {
				gone = append(gone, tc.prev[i])
			}
			for j, i := range same {
				switch {
				case i < 0:
					came = append(came, tc.next[j])
				case tc.prev[i] != tc.next[j]:
					t.Errorf("%s paired with %s", names(tc.next[j:j+1]), names(tc.prev[i:i+1]))
				}
			}
			if !slices.Equal(gone, tc.gone) || !slices.Equal(came, tc.came) {
				t.Errorf("gone %v came %v, want %v and %v", names(gone), names(came), names(tc.gone), names(tc.came))
			}
		})
	}
}

func names(rs []*rows.Row) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name+":"+string(r.JSON()))
	}
	return out
}

// TestTheEmptyTreeIsKept: the hash dropRecord never deletes is the empty
// tree's.
func TestTheEmptyTreeIsKept(t *testing.T) {
	o := &plumbing.MemoryObject{}
	if err := (&object.Tree{}).Encode(o); err != nil {
		t.Fatal(err)
	}
	if o.Hash() != emptyTree {
		t.Fatalf("the empty tree is %s, not %s", o.Hash(), emptyTree)
	}
}
