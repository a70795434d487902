package gitlabtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// StartGitea runs a fake Gitea (or Forgejo) for the test: the API v1
// routes the sink calls, over the same projects, branches, commits and
// merge requests (pull requests) as the GitLab fake, which it does not
// serve. Its token is Token, sent as "Authorization: token …".
func StartGitea(tb TB) *Server {
	s := Start(tb)
	s.mu.Lock()
	s.gitea = true
	s.mu.Unlock()
	return s
}

// serveGitea routes /api/v1/version and /api/v1/repos/<owner>/<repo>/...
func (s *Server) serveGitea(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/api/v1/version" && r.Method == http.MethodGet {
		writeJSON(w, http.StatusOK, map[string]string{"version": "1.22.3"})
		return
	}
	if r.Header.Get("Authorization") != "token "+Token {
		fail(w, http.StatusUnauthorized, "token is required")
		return
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/api/v1/repos/")
	if !ok {
		fail(w, http.StatusNotFound, "404 page not found")
		return
	}
	segs := strings.SplitN(rest, "/", 3)
	if len(segs) < 2 {
		fail(w, http.StatusNotFound, "404 page not found")
		return
	}
	owner, _ := url.PathUnescape(segs[0])
	repo, _ := url.PathUnescape(segs[1])
	name := owner + "/" + repo
	p := s.projects[name]
	if p == nil {
		fail(w, http.StatusNotFound, "The target couldn't be found.")
		return
	}
	tail := ""
	if len(segs) == 3 {
		tail = segs[2]
	}
	q := r.URL.Query()
	switch {
	case tail == "" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"id": p.id, "full_name": name, "default_branch": "main", "html_url": s.URL + "/" + name})
	case strings.HasPrefix(tail, "branches/") && r.Method == http.MethodGet:
		bn, _ := url.PathUnescape(strings.TrimPrefix(tail, "branches/"))
		b := p.branches[bn]
		if b == nil {
			fail(w, http.StatusNotFound, "The target couldn't be found.")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"name": bn, "commit": map[string]any{"id": b.commit, "message": ""}, "protected": false})
	case strings.HasPrefix(tail, "raw/") && r.Method == http.MethodGet:
		fp, _ := url.PathUnescape(strings.TrimPrefix(tail, "raw/"))
		b := p.branches[q.Get("ref")]
		if b == nil || b.files[fp] == nil {
			fail(w, http.StatusNotFound, "The target couldn't be found.")
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(b.files[fp])
	case strings.HasPrefix(tail, "git/trees/") && r.Method == http.MethodGet:
		ref, _ := url.PathUnescape(strings.TrimPrefix(tail, "git/trees/"))
		s.giteaTree(w, p, ref, q)
	case tail == "contents" && r.Method == http.MethodPost:
		s.giteaCommit(w, r, p)
	case tail == "pulls" && s.mrDown:
		fail(w, http.StatusServiceUnavailable, "503 Service Unavailable")
	case tail == "pulls" && r.Method == http.MethodGet:
		out := []map[string]any{}
		for _, mr := range p.mrs {
			if st := q.Get("state"); st == "all" || (st == "open" && mr.State == "opened") || (st == "closed" && mr.State != "opened") || st == "" && mr.State == "opened" {
				out = append(out, pullJSON(s.URL, name, mr))
			}
		}
		writeJSON(w, http.StatusOK, out)
	case tail == "pulls" && r.Method == http.MethodPost:
		var in struct{ Head, Base, Title string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Head == "" || in.Base == "" || in.Title == "" {
			fail(w, http.StatusUnprocessableEntity, "head, base and title are required")
			return
		}
		switch mr, refused := p.open(in.Head, in.Base, in.Title); refused {
		case noBranch:
			fail(w, http.StatusNotFound, "The target couldn't be found.")
		case alreadyOpen:
			fail(w, http.StatusConflict, "pull request already exists for these targets")
		default:
			writeJSON(w, http.StatusCreated, pullJSON(s.URL, name, mr))
		}
	default:
		fail(w, http.StatusNotFound, "404 page not found")
	}
}

func pullJSON(base, repo string, mr MergeRequest) map[string]any {
	state := "open"
	if mr.State != "opened" {
		state = "closed"
	}
	return map[string]any{"number": mr.IID, "title": mr.Title, "state": state, "merged": mr.State == "merged",
		"head": map[string]any{"ref": mr.SourceBranch}, "base": map[string]any{"ref": mr.TargetBranch},
		"html_url": fmt.Sprintf("%s/%s/pulls/%d", base, repo, mr.IID)}
}

// giteaTree answers a recursive tree of ref, page by page.
func (s *Server) giteaTree(w http.ResponseWriter, p *project, ref string, q url.Values) {
	b := p.branches[ref]
	if b == nil {
		fail(w, http.StatusNotFound, "sha not found")
		return
	}
	paths := make([]string, 0, len(b.files))
	for fp := range b.files {
		paths = append(paths, fp)
	}
	sort.Strings(paths)
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 1000
	}
	page, _ := strconv.Atoi(q.Get("page"))
	if page <= 0 {
		page = 1
	}
	from, to := min((page-1)*per, len(paths)), min(page*per, len(paths))
	tree := []map[string]any{}
	for _, fp := range paths[from:to] {
		tree = append(tree, map[string]any{"path": fp, "mode": "100644", "type": "blob", "size": len(b.files[fp]), "sha": blobID(b.files[fp])})
	}
	writeJSON(w, http.StatusOK, map[string]any{"sha": b.commit, "tree": tree, "truncated": to < len(paths), "page": page, "total_count": len(paths)})
}

// giteaCommit answers the contents route: several files changed in one
// commit, on branch or on new_branch started from branch.
func (s *Server) giteaCommit(w http.ResponseWriter, r *http.Request, p *project) {
	var in struct {
		Branch    string `json:"branch"`
		NewBranch string `json:"new_branch"`
		Message   string `json:"message"`
		Author    struct {
			Name  string `json:"name"`
			Email string `json:"email"`
		} `json:"author"`
		Files []struct {
			Operation string `json:"operation"`
			Path      string `json:"path"`
			Content   string `json:"content"`
			SHA       string `json:"sha"`
		} `json:"files"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || len(in.Files) == 0 {
		fail(w, http.StatusUnprocessableEntity, "files are required")
		return
	}
	br, start := in.Branch, ""
	if in.NewBranch != "" {
		if p.branches[in.NewBranch] != nil {
			fail(w, http.StatusUnprocessableEntity, "branch already exists")
			return
		}
		br, start = in.NewBranch, in.Branch
	}
	var changes []change
	for _, f := range in.Files {
		if (f.Operation == "update" || f.Operation == "delete") && f.SHA == "" {
			fail(w, http.StatusUnprocessableEntity, "sha is required to "+f.Operation+" "+f.Path)
			return
		}
		content, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			fail(w, http.StatusUnprocessableEntity, "content is not base64")
			return
		}
		changes = append(changes, change{action: f.Operation, path: f.Path, content: content, blob: f.SHA})
	}
	if in.Message == "" {
		in.Message = "Update files"
	}
	id, code, msg := p.apply(br, start, in.Message, in.Author.Name+" <"+in.Author.Email+">", changes)
	if code != 0 {
		fail(w, code, msg)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"commit": map[string]any{"sha": id, "message": in.Message}, "files": []any{}})
}
