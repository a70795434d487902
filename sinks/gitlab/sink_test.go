package gitlab_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"kollect.dev/kollect/internal/servers/gitlabtest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
	"kollect.dev/kollect/sinks/gitlab"
)

const project = "platform/inventory"

// onEachServer runs a test against the fake GitLab and the fake Gitea:
// the sink writes the same branches, files and merge requests to both.
func onEachServer(t *testing.T, test func(*testing.T, func(gitlabtest.TB) *gitlabtest.Server)) {
	for _, server := range []struct {
		name  string
		start func(gitlabtest.TB) *gitlabtest.Server
	}{{"GitLab", gitlabtest.Start}, {"Gitea", gitlabtest.StartGitea}} {
		t.Run(server.name, func(t *testing.T) { test(t, server.start) })
	}
}

func newSink(t *testing.T, srv *gitlabtest.Server, l git.Layout, mutate func(*gitlab.Config)) *gitlab.Sink {
	t.Helper()
	cfg := gitlab.Config{BaseURL: srv.URL, Project: project, Token: gitlabtest.Token, Git: git.Config{Layout: l}}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := gitlab.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// owned reads the sink's record of an inventory's files on a branch.
func owned(srv *gitlabtest.Server, branch string, id rows.Identity, cluster string) (map[string]string, map[string][]byte) {
	if cluster == "" {
		cluster = "default"
	}
	files := srv.Files(project, branch)
	var rec struct {
		Files map[string]string `json:"files"`
	}
	_ = json.Unmarshal(files[".kollect/owned/"+cluster+"/"+id.Namespace+"/"+id.Name+".json"], &rec)
	return rec.Files, files
}

// TestGitLabConformance runs the sink conformance suite against the fake
// GitLab: one file per row (exact counts) and one JSON document per
// inventory.
func TestGitLabConformance(t *testing.T) { onEachServer(t, testGitLabConformance) }

func testGitLabConformance(t *testing.T, start func(gitlabtest.TB) *gitlabtest.Server) {
	srv := start(t)
	srv.CreateProject(project)
	for _, c := range []struct {
		name   string
		layout git.Layout
	}{
		{"PerResourceJSON", git.Layout{Mode: "perResource", Format: "json", ItemPath: "{cluster}/{namespace}/{name}/{sourceNamespace}/{kind}/{sourceName}{extension}"}},
		{"DocumentJSON", git.Layout{Format: "json", DocumentPath: "inventory/{cluster}/{namespace}/{name}{extension}"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sinktest.Run(t, sinktest.Harness{
				WholeObjects: c.layout.Mode != "perResource",
				Untargeted:   true,
				New: func(t *testing.T, cluster string) sinks.Backend {
					l := c.layout
					l.Cluster = cluster
					return sinks.Whole(newSink(t, srv, l, nil))
				},
				State: func(t *testing.T, id rows.Identity, cluster string) []string {
					rec, files := owned(srv, "main", id, cluster)
					var out []string
					for p := range rec {
						body, ok := files[p]
						if !ok {
							t.Fatalf("the record names %s, which the branch does not hold", p)
						}
						var env struct {
							Items []json.RawMessage `json:"items"`
						}
						if json.Unmarshal(body, &env) == nil && env.Items != nil {
							for _, it := range env.Items {
								out = append(out, string(it))
							}
							continue
						}
						out = append(out, string(body))
					}
					return out
				},
				// Version counts the commits that touched the inventory's
				// files or record.
				Version: func(t *testing.T, id rows.Identity, _ string) string {
					n := 0
					for _, cm := range srv.Commits(project, "main") {
						for _, a := range cm.Actions {
							if strings.Contains(a, "/"+id.Name) {
								n++
								break
							}
						}
					}
					return strings.Repeat("|", n)
				},
				Stop:  func(*testing.T) { srv.SetDown(true) },
				Start: func(*testing.T) { srv.SetDown(false) },
			})
		})
	}
}

// An empty snapshot removes the inventory's files and its record, also in
// a document layout (where rendering it would give an empty document).
func TestEmptySnapshotRemovesTheDocument(t *testing.T) {
	onEachServer(t, testEmptySnapshotRemovesTheDocument)
}

func testEmptySnapshotRemovesTheDocument(t *testing.T, start func(gitlabtest.TB) *gitlabtest.Server) {
	srv := start(t)
	srv.CreateProject(project)
	s := newSink(t, srv, git.Layout{Format: "yaml"}, nil)
	id := rows.Identity{Namespace: "ops", Name: "inv"}
	for _, rs := range [][]*rows.Row{sinktest.Rows(3, "1"), nil} {
		if _, err := s.Export(context.Background(), sinktest.Snap(id, rs)); err != nil {
			t.Fatal(err)
		}
	}
	if files := srv.Files(project, "main"); len(files) != 0 {
		t.Fatalf("after an empty snapshot the branch holds %v", keys(files))
	}
}

// Merge-request mode: exports go to a branch of the inventory's own,
// started from the target branch, and one merge request stays open for it.
func TestMergeRequestModeOpensOneMergeRequest(t *testing.T) {
	onEachServer(t, testMergeRequestModeOpensOneMergeRequest)
}

func testMergeRequestModeOpensOneMergeRequest(t *testing.T, start func(gitlabtest.TB) *gitlabtest.Server) {
	srv := start(t)
	srv.CreateProject(project)
	ctx := context.Background()
	// The target branch exists with a file of someone else.
	base := newSink(t, srv, git.Layout{Format: "yaml"}, nil)
	other := rows.Identity{Namespace: "ops", Name: "other"}
	if _, err := base.Export(ctx, sinktest.Snap(other, sinktest.Rows(2, "1"))); err != nil {
		t.Fatal(err)
	}
	s := newSink(t, srv, git.Layout{Format: "yaml"}, func(c *gitlab.Config) {
		c.MergeRequest, c.TargetBranch, c.TitleTemplate = true, "main", "inventory {namespace}/{name}"
	})
	id := rows.Identity{Namespace: "team-a", Name: "apps"}
	for i, v := range []string{"1", "2", "2"} {
		ack, err := s.Export(ctx, sinktest.Snap(id, sinktest.Rows(3, v)))
		if err != nil {
			t.Fatalf("export %d: %v", i, err)
		}
		if wantChanged := i < 2; ack.Changed != wantChanged {
			t.Errorf("export %d: changed %v, want %v", i, ack.Changed, wantChanged)
		}
	}
	mrs := srv.MergeRequests(project)
	if len(mrs) != 1 || mrs[0].SourceBranch != "kollect/team-a/apps" || mrs[0].TargetBranch != "main" || mrs[0].Title != "inventory team-a/apps" {
		t.Fatalf("merge requests: %+v", mrs)
	}
	if n := len(srv.Commits(project, "kollect/team-a/apps")); n != 2 {
		t.Errorf("%d commits on the export branch, want 2 (the third export changed nothing)", n)
	}
	files := srv.Files(project, "kollect/team-a/apps")
	if _, ok := files["inventory/ops/other.yaml"]; !ok {
		t.Errorf("the export branch lost the target branch's files: %v", keys(files))
	}
	if _, ok := files["inventory/team-a/apps.yaml"]; !ok {
		t.Errorf("the export branch lacks the export: %v", keys(files))
	}
	if f := srv.Files(project, "main"); f["inventory/team-a/apps.yaml"] != nil {
		t.Error("merge-request mode wrote to the target branch")
	}
}

// An export whose commit lands but whose merge request cannot be opened is
// not acknowledged, and its retry, finding the branch already holding the
// export, opens the merge request then (it used to return before that
// step and report the export done with no merge request).
func TestAMergeRequestThatFailedIsOpenedByTheRetry(t *testing.T) {
	onEachServer(t, testAMergeRequestThatFailedIsOpenedByTheRetry)
}

func testAMergeRequestThatFailedIsOpenedByTheRetry(t *testing.T, start func(gitlabtest.TB) *gitlabtest.Server) {
	srv := start(t)
	srv.CreateProject(project)
	ctx := context.Background()
	base := newSink(t, srv, git.Layout{Format: "yaml"}, nil)
	if _, err := base.Export(ctx, sinktest.Snap(rows.Identity{Namespace: "ops", Name: "other"}, sinktest.Rows(1, "1"))); err != nil {
		t.Fatal(err)
	}
	s := newSink(t, srv, git.Layout{Format: "yaml"}, func(c *gitlab.Config) { c.MergeRequest, c.TargetBranch = true, "main" })
	snap := sinktest.Snap(rows.Identity{Namespace: "team-a", Name: "apps"}, sinktest.Rows(3, "1"))
	srv.SetMergeRequestsDown(true)
	if _, err := s.Export(ctx, snap); err == nil || !strings.Contains(err.Error(), "merge request") {
		t.Fatalf("an export without its merge request was acknowledged: %v", err)
	}
	if n := len(srv.Commits(project, "kollect/team-a/apps")); n != 1 {
		t.Fatalf("%d commits on the export branch, want the one that landed", n)
	}
	srv.SetMergeRequestsDown(false)
	if _, err := s.Export(ctx, snap); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if mrs := srv.MergeRequests(project); len(mrs) != 1 || mrs[0].SourceBranch != "kollect/team-a/apps" {
		t.Fatalf("merge requests after the retry: %+v", mrs)
	}
	if n := len(srv.Commits(project, "kollect/team-a/apps")); n != 1 {
		t.Errorf("the retry committed again (%d commits)", n)
	}
	// Merged by a person, the branch kept: the same export again (a
	// restart) opens nothing; a new change opens a new one.
	srv.MergeAll(project)
	if _, err := s.Export(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if mrs := srv.MergeRequests(project); len(mrs) != 1 {
		t.Fatalf("an unchanged export opened another merge request: %+v", mrs)
	}
	if _, err := s.Export(ctx, sinktest.Snap(rows.Identity{Namespace: "team-a", Name: "apps"}, sinktest.Rows(3, "2"))); err != nil {
		t.Fatal(err)
	}
	if mrs := srv.MergeRequests(project); len(mrs) != 2 || mrs[1].State != "opened" {
		t.Fatalf("a new change opened no merge request: %+v", mrs)
	}
}

// The token is checked, and a refusal is permanent and says what to fix.
func TestProbeAndBadToken(t *testing.T) { onEachServer(t, testProbeAndBadToken) }

func testProbeAndBadToken(t *testing.T, start func(gitlabtest.TB) *gitlabtest.Server) {
	srv := start(t)
	srv.CreateProject(project)
	if err := newSink(t, srv, git.Layout{}, nil).Probe(context.Background()); err != nil {
		t.Fatalf("probe: %v", err)
	}
	bad := newSink(t, srv, git.Layout{}, func(c *gitlab.Config) { c.Token = "wrong-token-value" })
	err := bad.Probe(context.Background())
	if err == nil || !strings.Contains(err.Error(), "refused the token") || strings.Contains(err.Error(), "wrong-token-value") {
		t.Fatalf("bad token: %v", err)
	}
	missing := newSink(t, srv, git.Layout{}, func(c *gitlab.Config) { c.Project = "platform/none" })
	if err := missing.Probe(context.Background()); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing project: %v", err)
	}
}

func TestParseEndpoint(t *testing.T) {
	cases := []struct{ in, base, project, branch, err string }{
		{"https://gitlab.example.com/group/sub/inventory.git#exports", "https://gitlab.example.com", "group/sub/inventory", "exports", ""},
		{"http://127.0.0.1:8080/a/b", "http://127.0.0.1:8080", "a/b", "", ""},
		{"ssh://git@gitlab.example.com/a/b", "", "", "", "want https://"},
		{"https://user:pw@gitlab.example.com/a/b", "", "", "", "credentials go in the Secret"},
		{"https://gitlab.example.com/", "", "", "", "want https://host/group/project"},
	}
	for _, c := range cases {
		base, p, br, err := gitlab.ParseEndpoint(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || base != c.base || p != c.project || br != c.branch {
			t.Errorf("%s: %s %s %s %v", c.in, base, p, br, err)
		}
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
