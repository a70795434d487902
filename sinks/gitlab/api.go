package gitlab

import (
	"bytes"
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

// api is the part of GitLab's REST API v4 the sink calls, and the HTTP
// plumbing the Gitea flavour shares (gitea.go).
type api struct {
	base    string // scheme://host
	project string // group/project, unescaped
	token   string
	client  *http.Client
	// name is the server's kind in messages (GitLab, Gitea).
	name string
	// authorize sets the token on a request: PRIVATE-TOKEN for GitLab.
	authorize func(*http.Request)
}

// newGitLab returns the GitLab API of a project.
func newGitLab(base, project, token string, client *http.Client) *api {
	return &api{base: base, project: project, token: token, client: client, name: "GitLab",
		authorize: func(r *http.Request) { r.Header.Set("PRIVATE-TOKEN", token) }}
}

// errNotFound is a 404 from the server.
var errNotFound = errors.New("not found")

func (a *api) url(p string, q url.Values) string {
	u := a.base + "/api/v4/projects/" + url.PathEscape(a.project) + p
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// do sends a request; out, when not nil, receives the JSON answer.
func (a *api) do(ctx context.Context, method, u string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	a.authorize(req)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, a.redact(u), err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return errNotFound
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return sinks.Permanent(fmt.Errorf("%s refused the token (%s) for %s %s: check the Secret's token and its scope (api, or repository and issue write)", a.name, resp.Status, method, a.redact(u)))
	case resp.StatusCode >= 300:
		err := fmt.Errorf("%s answered %s to %s %s%s", a.name, resp.Status, method, a.redact(u), errorMessage(data))
		if resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnprocessableEntity {
			return sinks.Permanent(err)
		}
		return err
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s's answer to %s %s does not parse: %w", a.name, method, a.redact(u), err)
		}
	}
	return nil
}

// errorMessage is what status may repeat of an error answer: the message
// field of a GitLab JSON error, cut short, or nothing. The endpoint is the
// tenant's choice, so the body of any other answer (an internal service's
// page) never reaches status, where the tenant could read it.
func errorMessage(body []byte) string {
	var e struct {
		Message any    `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	msg := e.Error
	switch m := e.Message.(type) {
	case string:
		msg = m
	case map[string]any, []any:
		if b, err := json.Marshal(m); err == nil {
			msg = string(b)
		}
	}
	msg = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.TrimSpace(msg))
	if msg == "" {
		return ""
	}
	if r := []rune(msg); len(r) > 160 {
		msg = string(r[:160]) + "…"
	}
	return ": " + msg
}

func (a *api) redact(u string) string {
	if a.token != "" {
		u = strings.ReplaceAll(u, a.token, "[REDACTED]")
	}
	return u
}

// project checks that the project exists and the token reaches it.
func (a *api) projectInfo(ctx context.Context) error {
	var p struct {
		ID int `json:"id"`
	}
	if err := a.do(ctx, http.MethodGet, a.url("", nil), nil, &p); err != nil {
		if errors.Is(err, errNotFound) {
			return sinks.Permanent(fmt.Errorf("GitLab project %q not found at %s (or the token cannot see it)", a.project, a.base))
		}
		return err
	}
	return nil
}

type branch struct {
	Name   string `json:"name"`
	Commit struct {
		ID string `json:"id"`
	} `json:"commit"`
}

// branch returns the branch, or errNotFound.
func (a *api) branch(ctx context.Context, name string) (branch, error) {
	var b branch
	err := a.do(ctx, http.MethodGet, a.url("/repository/branches/"+url.PathEscape(name), nil), nil, &b)
	return b, err
}

// rawFile reads a file of a branch, or errNotFound.
func (a *api) rawFile(ctx context.Context, ref, path string) ([]byte, error) {
	return a.raw(ctx, a.url("/repository/files/"+url.PathEscape(path)+"/raw", url.Values{"ref": {ref}}), path)
}

// raw reads the bytes at u (a file's content), or errNotFound.
func (a *api) raw(ctx context.Context, u, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	a.authorize(req)
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, errNotFound
	}
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("%s answered %s reading %s", a.name, resp.Status, path)
	}
	return io.ReadAll(resp.Body)
}

type treeEntry struct {
	ID   string `json:"id"`
	Path string `json:"path"`
	Type string `json:"type"`
}

// tree lists every file under dir on ref (recursively, page by page).
func (a *api) tree(ctx context.Context, ref, dir string) (map[string]string, error) {
	out := map[string]string{}
	for page := 1; ; page++ {
		q := url.Values{"ref": {ref}, "recursive": {"true"}, "per_page": {"100"}, "page": {fmt.Sprint(page)}}
		if dir != "" {
			q.Set("path", dir)
		}
		var entries []treeEntry
		if err := a.do(ctx, http.MethodGet, a.url("/repository/tree", q), nil, &entries); err != nil {
			if errors.Is(err, errNotFound) {
				return out, nil // no such directory (or an empty repository)
			}
			return nil, err
		}
		for _, e := range entries {
			if e.Type == "blob" {
				out[e.Path] = e.ID
			}
		}
		if len(entries) < 100 {
			return out, nil
		}
	}
}

// action is one file change of a commit.
type action struct {
	Action   string `json:"action"` // create, update, delete
	FilePath string `json:"file_path"`
	Content  string `json:"content,omitempty"`
	Encoding string `json:"encoding,omitempty"`
	// Blob is the blob id the file has before the change (update and
	// delete): Gitea refuses a change to a file that is not what the sink
	// saw. GitLab does not take it.
	Blob string `json:"-"`
}

type commitRequest struct {
	Branch      string   `json:"branch"`
	StartBranch string   `json:"start_branch,omitempty"`
	Message     string   `json:"commit_message"`
	AuthorName  string   `json:"author_name,omitempty"`
	AuthorEmail string   `json:"author_email,omitempty"`
	Actions     []action `json:"actions"`
}

// commit makes one commit of actions on branch; it returns its id.
func (a *api) commit(ctx context.Context, c commitRequest) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	err := a.do(ctx, http.MethodPost, a.url("/repository/commits", nil), c, &out)
	return out.ID, err
}

type mergeRequest struct {
	IID          int    `json:"iid"`
	SourceBranch string `json:"source_branch"`
	TargetBranch string `json:"target_branch"`
	WebURL       string `json:"web_url"`
}

// ensureMergeRequest finds a merge request from source to target in state
// ("opened", or "" for any state), or opens one when there is none.
func (a *api) ensureMergeRequest(ctx context.Context, source, target, state, title string) (mergeRequest, error) {
	var found []mergeRequest
	q := url.Values{"source_branch": {source}, "target_branch": {target}}
	if state != "" {
		q.Set("state", state)
	}
	if err := a.do(ctx, http.MethodGet, a.url("/merge_requests", q), nil, &found); err != nil {
		return mergeRequest{}, err
	}
	for _, mr := range found {
		if mr.SourceBranch == source && mr.TargetBranch == target {
			return mr, nil
		}
	}
	var mr mergeRequest
	err := a.do(ctx, http.MethodPost, a.url("/merge_requests", nil),
		map[string]string{"source_branch": source, "target_branch": target, "title": title}, &mr)
	return mr, err
}
