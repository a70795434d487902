package gitlab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"kollect.dev/kollect/sinks"
)

// gitea is the part of Gitea's (and Forgejo's) API v1 the sink calls: the
// same things GitLab's API holds, under other routes. A commit is one
// call of the contents route (create, update and delete together, Gitea
// 1.20 and later), a merge request a pull request.
type gitea struct {
	*api
	owner, repo string
}

// giteaAt asks the server whether it is Gitea or Forgejo: they answer
// /api/v1/version with their version, GitLab does not.
func giteaAt(ctx context.Context, a *api) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/api/v1/version", nil)
	if err != nil {
		return false, err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return false, fmt.Errorf("ask %s which server it is: %w", a.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		return false, fmt.Errorf("ask %s which server it is: it answered %s", a.base, resp.Status)
	}
	var v struct {
		Version string `json:"version"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode == http.StatusOK && json.Unmarshal(data, &v) == nil && v.Version != "", nil
}

// newGitea returns Gitea's API over gl's server and token. A Gitea
// repository is owner/name, one level.
func newGitea(gl *api) (*gitea, error) {
	owner, repo, ok := strings.Cut(gl.project, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return nil, sinks.Permanent(fmt.Errorf("gitlab: %s is Gitea or Forgejo, whose repositories are owner/name; the endpoint names %q", gl.base, gl.project))
	}
	a := *gl
	a.name = "Gitea"
	a.authorize = func(r *http.Request) { r.Header.Set("Authorization", "token "+gl.token) }
	return &gitea{api: &a, owner: owner, repo: repo}, nil
}

func (g *gitea) url(p string, q url.Values) string {
	u := g.base + "/api/v1/repos/" + url.PathEscape(g.owner) + "/" + url.PathEscape(g.repo) + p
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

func (g *gitea) projectInfo(ctx context.Context) error {
	var r struct {
		ID int `json:"id"`
	}
	if err := g.do(ctx, http.MethodGet, g.url("", nil), nil, &r); err != nil {
		if errors.Is(err, errNotFound) {
			return sinks.Permanent(fmt.Errorf("Gitea repository %s/%s not found at %s (or the token cannot see it)", g.owner, g.repo, g.base))
		}
		return err
	}
	return nil
}

func (g *gitea) branch(ctx context.Context, name string) (branch, error) {
	var b branch // Gitea's branch has commit.id, as GitLab's
	err := g.do(ctx, http.MethodGet, g.url("/branches/"+url.PathEscape(name), nil), nil, &b)
	return b, err
}

func (g *gitea) rawFile(ctx context.Context, ref, path string) ([]byte, error) {
	return g.raw(ctx, g.url("/raw/"+escapePath(path), url.Values{"ref": {ref}}), path)
}

// escapePath escapes each segment of a file path.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

func (g *gitea) tree(ctx context.Context, ref, dir string) (map[string]string, error) {
	out := map[string]string{}
	for page := 1; ; page++ {
		var t struct {
			Tree []struct {
				Path string `json:"path"`
				Type string `json:"type"`
				SHA  string `json:"sha"`
			} `json:"tree"`
			Truncated  bool `json:"truncated"`
			TotalCount int  `json:"total_count"`
		}
		q := url.Values{"recursive": {"true"}, "per_page": {"1000"}, "page": {fmt.Sprint(page)}}
		if err := g.do(ctx, http.MethodGet, g.url("/git/trees/"+url.PathEscape(ref), q), nil, &t); err != nil {
			if errors.Is(err, errNotFound) {
				return out, nil // no such branch (or an empty repository)
			}
			return nil, err
		}
		for _, e := range t.Tree {
			if e.Type == "blob" && (dir == "" || strings.HasPrefix(e.Path, strings.TrimSuffix(dir, "/")+"/")) {
				out[e.Path] = e.SHA
			}
		}
		if !t.Truncated || len(t.Tree) == 0 {
			return out, nil
		}
	}
}

func (g *gitea) commit(ctx context.Context, c commitRequest) (string, error) {
	type file struct {
		Operation string `json:"operation"`
		Path      string `json:"path"`
		Content   string `json:"content,omitempty"`
		SHA       string `json:"sha,omitempty"`
	}
	type identity struct {
		Name  string `json:"name"`
		Email string `json:"email"`
	}
	in := struct {
		Branch    string   `json:"branch,omitempty"`
		NewBranch string   `json:"new_branch,omitempty"`
		Message   string   `json:"message"`
		Author    identity `json:"author"`
		Committer identity `json:"committer"`
		Files     []file   `json:"files"`
	}{Branch: c.Branch, Message: c.Message, Author: identity{c.AuthorName, c.AuthorEmail}, Committer: identity{c.AuthorName, c.AuthorEmail}}
	if c.StartBranch != "" {
		in.Branch, in.NewBranch = c.StartBranch, c.Branch
	}
	for _, a := range c.Actions {
		in.Files = append(in.Files, file{Operation: a.Action, Path: a.FilePath, Content: a.Content, SHA: a.Blob})
	}
	var out struct {
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	err := g.do(ctx, http.MethodPost, g.url("/contents", nil), in, &out)
	return out.Commit.SHA, err
}

// ensureMergeRequest finds a pull request from source to target (open
// when state is "opened", any otherwise), or opens one.
func (g *gitea) ensureMergeRequest(ctx context.Context, source, target, state, title string) (mergeRequest, error) {
	type pull struct {
		Number int    `json:"number"`
		URL    string `json:"html_url"`
		Head   struct {
			Ref string `json:"ref"`
		} `json:"head"`
		Base struct {
			Ref string `json:"ref"`
		} `json:"base"`
	}
	st := "all"
	if state == "opened" {
		st = "open"
	}
	for page := 1; ; page++ {
		var found []pull
		if err := g.do(ctx, http.MethodGet, g.url("/pulls", url.Values{"state": {st}, "limit": {"50"}, "page": {fmt.Sprint(page)}}), nil, &found); err != nil {
			return mergeRequest{}, err
		}
		for _, p := range found {
			if p.Head.Ref == source && p.Base.Ref == target {
				return mergeRequest{IID: p.Number, SourceBranch: source, TargetBranch: target, WebURL: p.URL}, nil
			}
		}
		if len(found) < 50 {
			break
		}
	}
	var p pull
	if err := g.do(ctx, http.MethodPost, g.url("/pulls", nil), map[string]string{"head": source, "base": target, "title": title}, &p); err != nil {
		return mergeRequest{}, err
	}
	return mergeRequest{IID: p.Number, SourceBranch: source, TargetBranch: target, WebURL: p.URL}, nil
}
