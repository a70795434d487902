package git_test

import (
	"context"
	"flag"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/git"
)

func benchRows(b *testing.B, n int, image string, changed int) []*rows.Row {
	b.Helper()
	out := make([]*rows.Row, n)
	for i := range out {
		img := "app:1"
		if i < changed {
			img = image
		}
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: "t", Version: "v1", Kind: "ConfigMap"}, Namespace: fmt.Sprintf("ns-%d", i%50),
			Name: fmt.Sprintf("cm-%05d", i), UID: fmt.Sprintf("u%05d", i)}, rows.AttributesOf(map[string]any{"image": img, "replicas": i % 9}))
		if err != nil {
			b.Fatal(err)
		}
		out[i] = r
	}
	return out
}

// BenchmarkExport10k measures a first export of 10,000 rows as one file
// each, and then exports where one row changed: the second should cost a
// small fraction of the first.
func BenchmarkExport10k(b *testing.B) {
	const n = 10000
	for _, mode := range []string{"perResource", "document"} {
		b.Run(mode+"/first", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				bare := filepath.Join(b.TempDir(), "r.git")
				if out, err := exec.Command("git", "init", "--bare", "-b", "main", bare).CombinedOutput(); err != nil {
					b.Fatal(string(out))
				}
				s, err := openSink(b, git.Config{URL: "file://" + bare, MirrorDir: b.TempDir(), Layout: git.Layout{Mode: mode}})
				if err != nil {
					b.Fatal(err)
				}
				snap := rows.NewSnapshot(rows.Identity{Namespace: "default", Name: "inv"}, benchRows(b, n, "", 0), time.Now())
				b.StartTimer()
				if _, err := s.Export(context.Background(), snap); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(mode+"/one-changed", func(b *testing.B) {
			bare := filepath.Join(b.TempDir(), "r.git")
			if out, err := exec.Command("git", "init", "--bare", "-b", "main", bare).CombinedOutput(); err != nil {
				b.Fatal(string(out))
			}
			s, err := openSink(b, git.Config{URL: "file://" + bare, MirrorDir: b.TempDir(), Layout: git.Layout{Mode: mode}})
			if err != nil {
				b.Fatal(err)
			}
			base := benchRows(b, n, "", 0)
			if _, err := s.Export(context.Background(), rows.NewSnapshot(rows.Identity{Namespace: "default", Name: "inv"}, append([]*rows.Row(nil), base...), time.Now())); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				next := append([]*rows.Row(nil), base...)
				next[0] = benchRows(b, 1, fmt.Sprintf("app:%d", i+2), 1)[0]
				snap := rows.NewSnapshot(rows.Identity{Namespace: "default", Name: "inv"}, next, time.Now())
				b.StartTimer()
				ack, err := s.Export(context.Background(), snap)
				if err != nil || !ack.Changed {
					b.Fatalf("export: %v %+v", err, ack)
				}
			}
		})
	}
}

// benchFiles are the tree sizes BenchmarkCommit1kChangesInALargeTree
// measures; a million takes about ten minutes of setup here, so it is
// asked for: go test -bench Commit1k ./sinks/git/ -args -files 1000000
var benchFiles = flag.String("files", "10000,100000", "tree sizes (files) for BenchmarkCommit1kChangesInALargeTree, comma-separated")

// BenchmarkCommit1kChangesInALargeTree measures what a perResource export
// costs once the branch holds a large tree: 1,000 changed rows among the
// files of -files. The first export, which writes every file, is setup:
// done once per size (the framework calls a benchmark several times),
// logged and not timed. Rows are spread over 50 namespaces, so the 1,000
// changes touch every namespace's directory: Git stores a directory as one
// object, and a commit writes each touched directory again whole.
func BenchmarkCommit1kChangesInALargeTree(b *testing.B) {
	root := b.TempDir() // the sub-benchmark's own go with each call
	for _, f := range strings.Split(*benchFiles, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			b.Fatalf("-files: %v", err)
		}
		var (
			s       *git.Sink
			base    []*rows.Row
			version int
		)
		id := rows.Identity{Namespace: "default", Name: "inv"}
		setup := func(b *testing.B) {
			if s != nil {
				return
			}
			bare := filepath.Join(root, fmt.Sprint(n), "r.git")
			if out, err := exec.Command("git", "init", "--bare", "-b", "main", bare).CombinedOutput(); err != nil {
				b.Fatal(string(out))
			}
			var err error
			if s, err = openSink(b, git.Config{URL: "file://" + bare, MirrorDir: filepath.Join(root, fmt.Sprint(n), "mirror"),
				Layout: git.Layout{Mode: "perResource"}}); err != nil {
				b.Fatal(err)
			}
			base = benchRows(b, n, "", 0)
			start := time.Now()
			if _, err := s.Export(context.Background(), rows.NewSnapshot(id, append([]*rows.Row(nil), base...), time.Now())); err != nil {
				b.Fatal(err)
			}
			b.Logf("first export of %d files: %v", n, time.Since(start).Round(time.Millisecond))
		}
		b.Run(fmt.Sprintf("1000-of-%d", n), func(b *testing.B) {
			setup(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				version++
				next := append([]*rows.Row(nil), base...)
				copy(next, benchRows(b, 1000, fmt.Sprintf("app:%d", version+1), 1000))
				snap := rows.NewSnapshot(id, append([]*rows.Row(nil), next...), time.Now())
				b.StartTimer()
				ack, err := s.Export(context.Background(), snap)
				if err != nil || !ack.Changed {
					b.Fatalf("export: %v, %+v", err, ack)
				}
				base = next // what the branch holds
			}
			b.ReportMetric(float64(n), "files")
		})
		// Rows created and deleted change the record of owned files too.
		b.Run(fmt.Sprintf("100-created-100-deleted-of-%d", n), func(b *testing.B) {
			setup(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				version++
				next := append([]*rows.Row(nil), base[100:]...)
				for j := 0; j < 100; j++ {
					r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: "t", Version: "v1", Kind: "ConfigMap"}, Namespace: fmt.Sprintf("ns-%d", j%50),
						Name: fmt.Sprintf("new-%05d-%03d", version, j), UID: fmt.Sprintf("n%05d-%03d", version, j)}, rows.AttributesOf(map[string]any{"image": "app:1", "replicas": j % 9}))
					if err != nil {
						b.Fatal(err)
					}
					next = append(next, r)
				}
				snap := rows.NewSnapshot(id, next, time.Now())
				base = snap.Rows
				b.StartTimer()
				ack, err := s.Export(context.Background(), snap)
				if err != nil || !ack.Changed || ack.Written != 200 {
					b.Fatalf("export: %v, %+v", err, ack)
				}
			}
			b.ReportMetric(float64(n), "files")
		})
	}
}

// BenchmarkCommit1kChangesInFiftyDirectories holds what a commit changes
// fixed while the tree grows: 1,000 changed rows in 50 directories of
// 1,000 files each, in a tree of -files files spread over -files/1,000
// namespaces. Git rewrites a touched directory whole, so this is the
// change a commit is proportional to; its time should not follow the size
// of the tree.
func BenchmarkCommit1kChangesInFiftyDirectories(b *testing.B) {
	root := b.TempDir()
	for _, f := range strings.Split(*benchFiles, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			b.Fatalf("-files: %v", err)
		}
		namespaces := n / 1000
		if namespaces < 50 {
			continue
		}
		id := rows.Identity{Namespace: "default", Name: "inv"}
		row := func(b *testing.B, i int, image string) *rows.Row {
			r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: "t", Version: "v1", Kind: "ConfigMap"},
				Namespace: fmt.Sprintf("ns-%d", i%namespaces), Name: fmt.Sprintf("cm-%07d", i), UID: fmt.Sprintf("u%07d", i)},
				rows.AttributesOf(map[string]any{"image": image}))
			if err != nil {
				b.Fatal(err)
			}
			return r
		}
		var (
			s       *git.Sink
			base    []*rows.Row
			version int
		)
		// The first export is setup, once per size: the framework calls
		// the sub-benchmark more than once.
		setup := func(b *testing.B) {
			if s != nil {
				return
			}
			dir := filepath.Join(root, fmt.Sprint(n))
			bare := filepath.Join(dir, "r.git")
			if out, err := exec.Command("git", "init", "--bare", "-b", "main", bare).CombinedOutput(); err != nil {
				b.Fatal(string(out))
			}
			var err error
			if s, err = openSink(b, git.Config{URL: "file://" + bare, MirrorDir: filepath.Join(dir, "mirror"), Layout: git.Layout{Mode: "perResource"}}); err != nil {
				b.Fatal(err)
			}
			base = make([]*rows.Row, n)
			for i := range base {
				base[i] = row(b, i, "app:1")
			}
			start := time.Now()
			if _, err := s.Export(context.Background(), rows.NewSnapshot(id, append([]*rows.Row(nil), base...), time.Now())); err != nil {
				b.Fatal(err)
			}
			b.Logf("first export of %d files in %d directories: %v", n, namespaces, time.Since(start).Round(time.Millisecond))
		}
		b.Run(fmt.Sprintf("of-%d-in-%d-directories", n, namespaces), func(b *testing.B) {
			setup(b)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				version++
				next := append([]*rows.Row(nil), base...)
				for k := range 50 { // the directories of ns-0 … ns-49
					for j := range 20 {
						i := j*namespaces + k
						next[i] = row(b, i, fmt.Sprintf("app:%d", version+1))
					}
				}
				snap := rows.NewSnapshot(id, append([]*rows.Row(nil), next...), time.Now())
				b.StartTimer()
				ack, err := s.Export(context.Background(), snap)
				if err != nil || ack.Written != 1000 {
					b.Fatalf("export: %v, %+v", err, ack)
				}
				base = next
			}
			b.ReportMetric(float64(n), "files")
		})
	}
}
