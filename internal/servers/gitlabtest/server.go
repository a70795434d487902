// Package gitlabtest is an in-process fake of the part of GitLab's REST
// API v4 the GitLab sink uses: projects, branches, raw files, the
// repository tree, commits with create/update/delete actions, and merge
// requests. No GitLab can run here; its answers are checked against
// GitLab's official Go client in this package's tests.
package gitlabtest

import (
	"crypto/sha1" //nolint:gosec // Git blob ids are SHA-1
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Token is the PRIVATE-TOKEN the server accepts.
const Token = "glpat-kollect-test-0123456789"

// TB is the part of testing.TB Start needs.
type TB interface {
	Helper()
	Cleanup(func())
}

// Server is one fake GitLab instance.
type Server struct {
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	projects map[string]*project
	down     bool
	mrDown   bool
	gitea    bool // serves Gitea's API instead of GitLab's (StartGitea)
}

type project struct {
	id       int
	branches map[string]*branch
	commits  []Commit
	mrs      []MergeRequest
}

type branch struct {
	files  map[string][]byte
	commit string
}

// Commit is a commit the server recorded.
type Commit struct {
	ID, Branch, Message, Author string
	Actions                     []string // "create path", ...
}

// MergeRequest is a merge request the server holds.
type MergeRequest struct {
	IID                               int
	SourceBranch, TargetBranch, Title string
	State                             string
}

// Start runs a server for the test.
func Start(tb TB) *Server {
	tb.Helper()
	s := &Server{projects: map[string]*project{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	tb.Cleanup(s.srv.Close)
	return s
}

// CreateProject makes an empty project at path (group/name).
func (s *Server) CreateProject(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.projects[path] = &project{id: len(s.projects) + 1, branches: map[string]*branch{}}
}

// SetDown makes every request fail with 503 (an outage) or serve again.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// SetMergeRequestsDown makes the merge-request endpoints alone fail with
// 503 (a partial outage between a commit and its merge request), or
// serve again.
func (s *Server) SetMergeRequestsDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mrDown = down
}

// MergeAll marks every open merge request of a project merged, as a
// person accepting them would (the source branches stay).
func (s *Server) MergeAll(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.projects[path].mrs {
		if s.projects[path].mrs[i].State == "opened" {
			s.projects[path].mrs[i].State = "merged"
		}
	}
}

// Files returns a copy of a branch's files (nil when it does not exist).
func (s *Server) Files(path, br string) map[string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[path]
	if p == nil || p.branches[br] == nil {
		return nil
	}
	out := map[string][]byte{}
	for k, v := range p.branches[br].files {
		out[k] = v
	}
	return out
}

// Commits lists the commits made on a branch, oldest first.
func (s *Server) Commits(path, br string) []Commit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Commit
	for _, c := range s.projects[path].commits {
		if c.Branch == br {
			out = append(out, c)
		}
	}
	return out
}

// MergeRequests lists a project's merge requests.
func (s *Server) MergeRequests(path string) []MergeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]MergeRequest(nil), s.projects[path].mrs...)
}

func blobID(b []byte) string {
	h := sha1.New() //nolint:gosec // Git blob ids are SHA-1
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"message": msg})
}

// serve routes /api/v4/projects/<escaped path>[/...]. The project path is
// one escaped segment, so routing reads the escaped URL.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		fail(w, http.StatusServiceUnavailable, "503 Service Unavailable")
		return
	}
	if s.gitea {
		s.serveGitea(w, r)
		return
	}
	if r.Header.Get("PRIVATE-TOKEN") != Token {
		fail(w, http.StatusUnauthorized, "401 Unauthorized")
		return
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/api/v4/projects/")
	if !ok {
		fail(w, http.StatusNotFound, "404 Not Found")
		return
	}
	seg, tail, _ := strings.Cut(rest, "/")
	name, _ := url.PathUnescape(seg)
	p := s.projects[name]
	if p == nil {
		fail(w, http.StatusNotFound, "404 Project Not Found")
		return
	}
	q := r.URL.Query()
	switch {
	case tail == "" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"id": p.id, "path_with_namespace": name, "default_branch": "main",
			"web_url": s.URL + "/" + name, "name": name[strings.LastIndex(name, "/")+1:]})
	case strings.HasPrefix(tail, "repository/branches/") && r.Method == http.MethodGet:
		bn, _ := url.PathUnescape(strings.TrimPrefix(tail, "repository/branches/"))
		b := p.branches[bn]
		if b == nil {
			fail(w, http.StatusNotFound, "404 Branch Not Found")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"name": bn, "commit": map[string]any{"id": b.commit, "short_id": b.commit[:8]},
			"merged": false, "protected": false, "default": bn == "main", "web_url": s.URL + "/" + name + "/-/tree/" + bn})
	case strings.HasPrefix(tail, "repository/files/") && strings.HasSuffix(tail, "/raw") && r.Method == http.MethodGet:
		fp, _ := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(tail, "repository/files/"), "/raw"))
		b := p.branches[q.Get("ref")]
		if b == nil || b.files[fp] == nil {
			fail(w, http.StatusNotFound, "404 File Not Found")
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(b.files[fp])
	case tail == "repository/tree" && r.Method == http.MethodGet:
		s.tree(w, p, q)
	case tail == "repository/commits" && r.Method == http.MethodPost:
		s.commit(w, r, p)
	case tail == "merge_requests" && s.mrDown:
		fail(w, http.StatusServiceUnavailable, "503 Service Unavailable")
	case tail == "merge_requests" && r.Method == http.MethodGet:
		var out []map[string]any
		for _, mr := range p.mrs {
			if (q.Get("state") == "" || q.Get("state") == mr.State) && (q.Get("source_branch") == "" || q.Get("source_branch") == mr.SourceBranch) &&
				(q.Get("target_branch") == "" || q.Get("target_branch") == mr.TargetBranch) {
				out = append(out, mrJSON(s.URL, name, mr))
			}
		}
		if out == nil {
			out = []map[string]any{}
		}
		writeJSON(w, http.StatusOK, out)
	case tail == "merge_requests" && r.Method == http.MethodPost:
		var in struct {
			Source string `json:"source_branch"`
			Target string `json:"target_branch"`
			Title  string `json:"title"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Source == "" || in.Target == "" || in.Title == "" {
			fail(w, http.StatusBadRequest, "source_branch, target_branch and title are required")
			return
		}
		switch mr, refused := p.open(in.Source, in.Target, in.Title); refused {
		case noBranch:
			fail(w, http.StatusNotFound, "404 Branch Not Found")
		case alreadyOpen:
			fail(w, http.StatusConflict, "Another open merge request already exists for this source branch")
		default:
			writeJSON(w, http.StatusCreated, mrJSON(s.URL, name, mr))
		}
	default:
		fail(w, http.StatusNotFound, "404 Not Found")
	}
}

func mrJSON(base, project string, mr MergeRequest) map[string]any {
	return map[string]any{"id": 1000 + mr.IID, "iid": mr.IID, "source_branch": mr.SourceBranch, "target_branch": mr.TargetBranch,
		"title": mr.Title, "state": mr.State, "web_url": fmt.Sprintf("%s/%s/-/merge_requests/%d", base, project, mr.IID)}
}

func (s *Server) tree(w http.ResponseWriter, p *project, q url.Values) {
	b := p.branches[q.Get("ref")]
	if b == nil {
		fail(w, http.StatusNotFound, "404 Tree Not Found")
		return
	}
	dir := strings.Trim(q.Get("path"), "/")
	var paths []string
	for fp := range b.files {
		if dir == "" || strings.HasPrefix(fp, dir+"/") {
			paths = append(paths, fp)
		}
	}
	if len(paths) == 0 && dir != "" {
		fail(w, http.StatusNotFound, "404 Tree Not Found")
		return
	}
	sort.Strings(paths)
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 20
	}
	page, _ := strconv.Atoi(q.Get("page"))
	if page <= 0 {
		page = 1
	}
	from, to := min((page-1)*per, len(paths)), min(page*per, len(paths))
	out := []map[string]any{}
	for _, fp := range paths[from:to] {
		out = append(out, map[string]any{"id": blobID(b.files[fp]), "name": fp[strings.LastIndex(fp, "/")+1:], "type": "blob", "path": fp, "mode": "100644"})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) commit(w http.ResponseWriter, r *http.Request, p *project) {
	var in struct {
		Branch      string `json:"branch"`
		StartBranch string `json:"start_branch"`
		Message     string `json:"commit_message"`
		AuthorName  string `json:"author_name"`
		AuthorEmail string `json:"author_email"`
		Actions     []struct {
			Action   string `json:"action"`
			FilePath string `json:"file_path"`
			Content  string `json:"content"`
			Encoding string `json:"encoding"`
		} `json:"actions"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Branch == "" || in.Message == "" || len(in.Actions) == 0 {
		fail(w, http.StatusBadRequest, "branch, commit_message and actions are required")
		return
	}
	var changes []change
	for _, a := range in.Actions {
		content := []byte(a.Content)
		if a.Encoding == "base64" {
			var err error
			if content, err = base64.StdEncoding.DecodeString(a.Content); err != nil {
				fail(w, http.StatusBadRequest, "content is not base64")
				return
			}
		}
		changes = append(changes, change{action: a.Action, path: a.FilePath, content: content})
	}
	id, code, msg := p.apply(in.Branch, in.StartBranch, in.Message, in.AuthorName+" <"+in.AuthorEmail+">", changes)
	if code != 0 {
		fail(w, code, msg)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": id, "short_id": id[:8], "title": strings.SplitN(in.Message, "\n", 2)[0],
		"message": in.Message, "author_name": in.AuthorName, "author_email": in.AuthorEmail,
		"created_at": time.Now().UTC().Format(time.RFC3339), "web_url": s.URL + "/-/commit/" + id})
}

// change is one file change of a commit: create, update or delete. blob,
// when set, is the blob id the file must have before it (Gitea's sha).
type change struct {
	action, path string
	content      []byte
	blob         string
}

// apply makes one commit of changes on branch br, started from start when
// br does not exist; it returns the commit's id, or the status and
// message of a refusal.
// Why a merge (pull) request could not be opened; each server words it
// its own way.
const (
	noBranch = iota + 1
	alreadyOpen
)

// open opens a merge request from source into target, as GitLab and
// Gitea both do: both branches must exist, and one open request per pair.
func (p *project) open(source, target, title string) (MergeRequest, int) {
	if p.branches[source] == nil || p.branches[target] == nil {
		return MergeRequest{}, noBranch
	}
	for _, mr := range p.mrs {
		if mr.State == "opened" && mr.SourceBranch == source && mr.TargetBranch == target {
			return MergeRequest{}, alreadyOpen
		}
	}
	mr := MergeRequest{IID: len(p.mrs) + 1, SourceBranch: source, TargetBranch: target, Title: title, State: "opened"}
	p.mrs = append(p.mrs, mr)
	return mr, 0
}

func (p *project) apply(br, start, message, author string, changes []change) (string, int, string) {
	b := p.branches[br]
	files := map[string][]byte{}
	switch {
	case b != nil:
		for k, v := range b.files {
			files[k] = v
		}
	case start != "":
		sb := p.branches[start]
		if sb == nil {
			return "", http.StatusBadRequest, "You can only create or edit files when you are on a branch"
		}
		for k, v := range sb.files {
			files[k] = v
		}
	case len(p.branches) > 0:
		return "", http.StatusBadRequest, "You can only create or edit files when you are on a branch"
	}
	var done []string
	for _, c := range changes {
		old, exists := files[c.path]
		if c.blob != "" && exists && blobID(old) != c.blob {
			return "", http.StatusConflict, "sha does not match the file's: " + c.path
		}
		switch c.action {
		case "create":
			if exists {
				return "", http.StatusBadRequest, "A file with this name already exists"
			}
			files[c.path] = c.content
		case "update":
			if !exists {
				return "", http.StatusBadRequest, "A file with this name doesn't exist"
			}
			files[c.path] = c.content
		case "delete":
			if !exists {
				return "", http.StatusBadRequest, "A file with this name doesn't exist"
			}
			delete(files, c.path)
		default:
			return "", http.StatusBadRequest, "action does not have a valid value"
		}
		done = append(done, c.action+" "+c.path)
	}
	id := blobID([]byte(fmt.Sprintf("%s %d %s", br, len(p.commits), message)))
	p.branches[br] = &branch{files: files, commit: id}
	p.commits = append(p.commits, Commit{ID: id, Branch: br, Message: message, Author: author, Actions: done})
	return id, 0, ""
}
