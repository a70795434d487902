package gitlabtest_test

import (
	"encoding/base64"
	"testing"

	"code.gitea.io/sdk/gitea"

	"kollect.dev/kollect/internal/servers/gitlabtest"
)

// The Gitea flavour answers as Gitea does: each route the sink uses is
// called with Gitea's official Go SDK, whose types decode its answers.
func TestFakeAnswersAsGitea(t *testing.T) {
	srv := gitlabtest.StartGitea(t)
	srv.CreateProject("platform/inventory")
	c, err := gitea.NewClient(srv.URL, gitea.SetToken(gitlabtest.Token)) // asks /api/v1/version
	if err != nil {
		t.Fatal(err)
	}
	const owner, repo = "platform", "inventory"
	r, _, err := c.GetRepo(owner, repo)
	if err != nil || r.FullName != "platform/inventory" || r.ID == 0 {
		t.Fatalf("repository: %+v %v", r, err)
	}
	if _, resp, err := c.GetRepoBranch(owner, repo, "main"); err == nil || resp.StatusCode != 404 {
		t.Fatalf("a missing branch: want 404, got %v", err)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	ident := gitea.Identity{Name: "kollect", Email: "kollect@kollect.dev"}
	first, _, err := c.ChangeFiles(owner, repo, gitea.ChangeFilesOptions{Branch: "main", Message: "first", Author: ident, Committer: ident,
		Files: []*gitea.ChangeFileOperation{{Operation: "create", Path: "a/one.yaml", Content: b64("one\n")}, {Operation: "create", Path: "a/two.yaml", Content: b64("two\n")}}})
	if err != nil || first.Commit == nil || first.Commit.SHA == "" {
		t.Fatalf("commit: %+v %v", first, err)
	}
	br, _, err := c.GetRepoBranch(owner, repo, "main")
	if err != nil || br.Commit == nil || br.Commit.ID != first.Commit.SHA {
		t.Fatalf("branch: %+v %v", br, err)
	}
	raw, _, err := c.GetFile(owner, repo, "main", "a/one.yaml")
	if err != nil || string(raw) != "one\n" {
		t.Fatalf("raw file: %q %v", raw, err)
	}
	tree, _, err := c.GetTrees(owner, repo, gitea.ListTreeOptions{Ref: "main", Recursive: true})
	if err != nil || len(tree.Entries) != 2 || tree.Entries[0].Path != "a/one.yaml" || tree.Entries[0].Type != "blob" || tree.Entries[0].SHA == "" {
		t.Fatalf("tree: %+v %v", tree, err)
	}
	oneSHA := tree.Entries[0].SHA
	if _, resp, err := c.ChangeFiles(owner, repo, gitea.ChangeFilesOptions{Branch: "main", Message: "stale",
		Files: []*gitea.ChangeFileOperation{{Operation: "update", Path: "a/one.yaml", Content: b64("x"), SHA: "0000000000000000000000000000000000000000"}}}); err == nil || resp.StatusCode != 409 {
		t.Fatalf("an update naming a stale sha: want 409, got %v", err)
	}
	if _, _, err := c.ChangeFiles(owner, repo, gitea.ChangeFilesOptions{Branch: "main", NewBranch: "kollect/team-a/apps", Message: "export",
		Files: []*gitea.ChangeFileOperation{{Operation: "update", Path: "a/one.yaml", Content: b64("uno\n"), SHA: oneSHA},
			{Operation: "delete", Path: "a/two.yaml", SHA: tree.Entries[1].SHA}}}); err != nil {
		t.Fatalf("a commit on a new branch: %v", err)
	}
	if f := srv.Files("platform/inventory", "kollect/team-a/apps"); string(f["a/one.yaml"]) != "uno\n" || f["a/two.yaml"] != nil {
		t.Fatalf("the new branch holds %v", f)
	}
	pr, _, err := c.CreatePullRequest(owner, repo, gitea.CreatePullRequestOption{Head: "kollect/team-a/apps", Base: "main", Title: "inventory team-a/apps"})
	if err != nil || pr.Index != 1 || pr.Head == nil || pr.Head.Ref != "kollect/team-a/apps" || pr.Base.Ref != "main" || pr.State != gitea.StateOpen {
		t.Fatalf("pull request: %+v %v", pr, err)
	}
	open, _, err := c.ListRepoPullRequests(owner, repo, gitea.ListPullRequestsOptions{State: gitea.StateOpen})
	if err != nil || len(open) != 1 || open[0].Index != 1 {
		t.Fatalf("open pull requests: %+v %v", open, err)
	}
	if _, resp, err := c.CreatePullRequest(owner, repo, gitea.CreatePullRequestOption{Head: "kollect/team-a/apps", Base: "main", Title: "again"}); err == nil || resp.StatusCode != 409 {
		t.Fatalf("a second open pull request for the same branches: want 409, got %v", err)
	}
}
