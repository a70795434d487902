package gitlabtest_test

import (
	"testing"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	"kollect.dev/kollect/internal/servers/gitlabtest"
)

// The fake answers as GitLab does: each endpoint the sink uses is called
// with GitLab's official Go client, whose types decode its answers.
func TestFakeAnswersAsGitLab(t *testing.T) {
	srv := gitlabtest.Start(t)
	srv.CreateProject("platform/inventory")
	c, err := gl.NewClient(gitlabtest.Token, gl.WithBaseURL(srv.URL+"/api/v4"))
	if err != nil {
		t.Fatal(err)
	}
	const pid = "platform/inventory"
	p, _, err := c.Projects.GetProject(pid, nil)
	if err != nil || p.PathWithNamespace != pid || p.ID == 0 {
		t.Fatalf("project: %+v %v", p, err)
	}
	if _, resp, err := c.Branches.GetBranch(pid, "main"); err == nil || resp.StatusCode != 404 {
		t.Fatalf("a missing branch: want 404, got %v", err)
	}
	create, update, del := gl.FileCreate, gl.FileUpdate, gl.FileDelete
	commit, _, err := c.Commits.CreateCommit(pid, &gl.CreateCommitOptions{Branch: gl.Ptr("main"), CommitMessage: gl.Ptr("first"),
		AuthorName: gl.Ptr("kollect"), AuthorEmail: gl.Ptr("kollect@kollect.dev"),
		Actions: []*gl.CommitActionOptions{
			{Action: &create, FilePath: gl.Ptr("a/one.yaml"), Content: gl.Ptr("b25lCg=="), Encoding: gl.Ptr("base64")},
			{Action: &create, FilePath: gl.Ptr("a/two.yaml"), Content: gl.Ptr("two\n")},
		}})
	if err != nil || commit.ID == "" || commit.Title != "first" || commit.AuthorName != "kollect" {
		t.Fatalf("commit: %+v %v", commit, err)
	}
	b, _, err := c.Branches.GetBranch(pid, "main")
	if err != nil || b.Name != "main" || b.Commit == nil || b.Commit.ID != commit.ID {
		t.Fatalf("branch: %+v %v", b, err)
	}
	raw, _, err := c.RepositoryFiles.GetRawFile(pid, "a/one.yaml", &gl.GetRawFileOptions{Ref: gl.Ptr("main")})
	if err != nil || string(raw) != "one\n" {
		t.Fatalf("raw file: %q %v", raw, err)
	}
	tree, _, err := c.Repositories.ListTree(pid, &gl.ListTreeOptions{Ref: gl.Ptr("main"), Recursive: gl.Ptr(true), ListOptions: gl.ListOptions{PerPage: 1, Page: 2}})
	// The blob id is Git's: sha1("blob 4\x00two\n").
	if err != nil || len(tree) != 1 || tree[0].Path != "a/two.yaml" || tree[0].Type != "blob" || tree[0].ID != "f719efd430d52bcfc8566a43b2eb655688d38871" {
		t.Fatalf("tree page 2: %+v %v", tree, err)
	}
	if _, _, err := c.Commits.CreateCommit(pid, &gl.CreateCommitOptions{Branch: gl.Ptr("main"), CommitMessage: gl.Ptr("bad"),
		Actions: []*gl.CommitActionOptions{{Action: &create, FilePath: gl.Ptr("a/one.yaml"), Content: gl.Ptr("x")}}}); err == nil {
		t.Fatal("creating a file that exists was accepted")
	}
	if _, _, err := c.Commits.CreateCommit(pid, &gl.CreateCommitOptions{Branch: gl.Ptr("feature"), StartBranch: gl.Ptr("main"), CommitMessage: gl.Ptr("second"),
		Actions: []*gl.CommitActionOptions{{Action: &update, FilePath: gl.Ptr("a/one.yaml"), Content: gl.Ptr("1\n")}, {Action: &del, FilePath: gl.Ptr("a/two.yaml")}}}); err != nil {
		t.Fatal(err)
	}
	mr, _, err := c.MergeRequests.CreateMergeRequest(pid, &gl.CreateMergeRequestOptions{SourceBranch: gl.Ptr("feature"), TargetBranch: gl.Ptr("main"), Title: gl.Ptr("export")})
	if err != nil || mr.IID != 1 || mr.SourceBranch != "feature" || mr.State != "opened" {
		t.Fatalf("merge request: %+v %v", mr, err)
	}
	open, _, err := c.MergeRequests.ListProjectMergeRequests(pid, &gl.ListProjectMergeRequestsOptions{State: gl.Ptr("opened"), SourceBranch: gl.Ptr("feature")})
	if err != nil || len(open) != 1 || open[0].IID != 1 || open[0].TargetBranch != "main" {
		t.Fatalf("open merge requests: %+v %v", open, err)
	}
	if f := srv.Files(pid, "feature"); len(f) != 1 || string(f["a/one.yaml"]) != "1\n" {
		t.Fatalf("feature branch files: %v", f)
	}
	if _, _, err := (func() (*gl.Project, *gl.Response, error) {
		bad, _ := gl.NewClient("wrong", gl.WithBaseURL(srv.URL+"/api/v4"))
		return bad.Projects.GetProject(pid, nil)
	})(); err == nil {
		t.Fatal("a wrong token was accepted")
	}
}
