package git_test

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
)

// TestGitConformance runs the sink conformance suite on a repository:
// one file per row (exact counts: a changed row is a changed file) and a
// JSON document per inventory. An outage is the remote moved away.
func TestGitConformance(t *testing.T) {
	for _, c := range []struct {
		name   string
		layout git.Layout
	}{
		{"PerResourceJSON", git.Layout{Mode: "perResource", Format: "json", ItemPath: "{cluster}/{namespace}/{name}/{sourceNamespace}/{kind}/{sourceName}{extension}"}},
		{"DocumentJSON", git.Layout{Format: "json", DocumentPath: "inventory/{cluster}/{namespace}/{name}{extension}"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bare := remote(t)
			away := bare + ".away"
			show := func(args ...string) (string, bool) {
				out, err := exec.Command("git", append([]string{"--git-dir", bare}, args...)...).Output()
				return string(out), err == nil
			}
			sinktest.Run(t, sinktest.Harness{
				WholeObjects: c.layout.Mode != "perResource",
				Untargeted:   true,
				New: func(t *testing.T, cluster string) sinks.Backend {
					l := c.layout
					l.Cluster = cluster
					s, err := openSink(t, git.Config{URL: "file://" + bare, MirrorDir: t.TempDir(), Layout: l})
					if err != nil {
						t.Fatal(err)
					}
					return sinks.Whole(s)
				},
				// State reads the files the sink's owned-files ref names (per
				// row), or the inventory's document, on main.
				State: func(t *testing.T, id rows.Identity, cluster string) []string {
					if cluster == "" {
						cluster = "default"
					}
					list, ok := show("ls-tree", "-r", "--name-only", "refs/kollect/owned/"+cluster+"/"+id.Namespace+"/"+id.Name+":files")
					var paths []string
					for _, entry := range strings.Fields(list) {
						_, name, _ := strings.Cut(entry, "/") // files/<bucket>/<escaped path>
						p, err := url.PathUnescape(name)
						if err != nil {
							t.Fatal(err)
						}
						paths = append(paths, p)
					}
					list = strings.Join(paths, "\n")
					if c.layout.Mode != "perResource" {
						list, ok = "inventory/"+cluster+"/"+id.Namespace+"/"+id.Name+".json", true
						if _, exists := show("cat-file", "-e", "main:"+list); !exists {
							return nil
						}
					}
					if !ok {
						return nil
					}
					var out []string
					for _, p := range strings.Fields(list) {
						body, ok := show("show", "main:"+p)
						if !ok {
							t.Fatalf("the owned list names %s, which main does not hold", p)
						}
						var env struct {
							Items []json.RawMessage `json:"items"`
						}
						if json.Unmarshal([]byte(body), &env) == nil && env.Items != nil {
							for _, it := range env.Items {
								out = append(out, string(it))
							}
							continue
						}
						out = append(out, body)
					}
					return out
				},
				Version: func(t *testing.T, _ rows.Identity, _ string) string {
					head, _ := show("rev-parse", "main")
					return head
				},
				Stop: func(t *testing.T) {
					if err := os.Rename(bare, away); err != nil {
						t.Fatal(err)
					}
				},
				Start: func(t *testing.T) {
					if err := os.Rename(away, bare); err != nil {
						t.Fatal(err)
					}
				},
			})
		})
	}
}
