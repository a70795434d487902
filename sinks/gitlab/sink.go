package gitlab

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
)

// Config is one GitLab sink.
type Config struct {
	// BaseURL is the GitLab instance (https://gitlab.example.com), Project
	// the project's path (group/subgroup/project).
	BaseURL, Project string
	// Branch is the branch of direct mode (default main).
	Branch string
	// Token is sent as PRIVATE-TOKEN.
	Token string
	// Git is the layout, commit message templates and author: what the Git
	// sink would write, so both write the same tree.
	Git git.Config
	// MergeRequest mode commits to BranchPrefix/<namespace>/<name>
	// (default prefix kollect), started from TargetBranch, and keeps one
	// merge request open into TargetBranch titled TitleTemplate
	// ({namespace}, {name}).
	MergeRequest                              bool
	TargetBranch, BranchPrefix, TitleTemplate string
	// HTTPClient dials through the endpoint guard.
	HTTPClient *http.Client
}

// host is what the sink asks of the server: GitLab's REST API v4 (api.go)
// or Gitea's and Forgejo's API v1 (gitea.go), which hold the same things
// under other names.
type host interface {
	projectInfo(ctx context.Context) error
	branch(ctx context.Context, name string) (branch, error)
	rawFile(ctx context.Context, ref, path string) ([]byte, error)
	tree(ctx context.Context, ref, dir string) (map[string]string, error)
	commit(ctx context.Context, c commitRequest) (string, error)
	ensureMergeRequest(ctx context.Context, source, target, state, title string) (mergeRequest, error)
}

var (
	_ host = (*api)(nil)
	_ host = (*gitea)(nil)
)

// Sink exports snapshots to a GitLab project, or a Gitea or Forgejo
// repository.
type Sink struct {
	cfg Config
	gl  *api
	// api is gl, or Gitea's, once the server said which it is.
	hostMu sync.Mutex
	api    host

	mu      sync.Mutex
	writers map[string]string // inventory → the writer its next record names
}

// New checks cfg and returns its sink.
func New(cfg Config) (*Sink, error) {
	if cfg.BaseURL == "" || cfg.Project == "" {
		return nil, sinks.Permanent(errors.New("gitlab: the endpoint must name the instance and the project (https://gitlab.example.com/group/project)"))
	}
	if cfg.Token == "" {
		return nil, sinks.Permanent(errors.New("gitlab: the Secret has no token (key token or password): GitLab's API needs one"))
	}
	if cfg.Branch == "" {
		cfg.Branch = "main"
	}
	if cfg.MergeRequest && cfg.TargetBranch == "" {
		return nil, sinks.Permanent(errors.New("gitlab: mergeRequest mode needs mergeRequest.targetBranch"))
	}
	if cfg.BranchPrefix == "" {
		cfg.BranchPrefix = "kollect"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Git.CommitMessage == "" {
		cfg.Git.CommitMessage = "kollect: export inventory {namespace}/{name} ({itemCount} items)"
	}
	if cfg.Git.AuthorName == "" {
		cfg.Git.AuthorName, cfg.Git.AuthorEmail = "kollect", "kollect@kollect.dev"
	}
	return &Sink{cfg: cfg, writers: map[string]string{}, gl: newGitLab(strings.TrimRight(cfg.BaseURL, "/"), cfg.Project, cfg.Token, cfg.HTTPClient)}, nil
}

// host returns the server's API. It asks the server once which kind it is
// (upstream pushed to any host and fell back to Gitea's pull requests):
// a server that answers Gitea's version route is Gitea or Forgejo, any
// other GitLab. An answer that did not arrive is asked again next time.
func (s *Sink) host(ctx context.Context) (host, error) {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	if s.api != nil {
		return s.api, nil
	}
	isGitea, err := giteaAt(ctx, s.gl)
	if err != nil {
		return nil, err
	}
	s.api = s.gl
	if isGitea {
		if s.api, err = newGitea(s.gl); err != nil {
			s.api = nil
			return nil, err
		}
	}
	return s.api, nil
}

// ParseEndpoint splits https://host[:port]/group/project[.git][#[branch=]name].
func ParseEndpoint(raw string) (base, project, branch string, err error) {
	rest, frag, _ := strings.Cut(raw, "#")
	scheme, hostPath, ok := strings.Cut(rest, "://")
	if !ok || (scheme != "https" && scheme != "http") {
		return "", "", "", fmt.Errorf("gitlab endpoint %q: want https://host/group/project", raw)
	}
	host, p, _ := strings.Cut(hostPath, "/")
	p = strings.TrimSuffix(strings.Trim(p, "/"), ".git")
	if host == "" || p == "" || strings.Contains(host, "@") {
		return "", "", "", fmt.Errorf("gitlab endpoint %q: want https://host/group/project (credentials go in the Secret)", raw)
	}
	return scheme + "://" + host, p, strings.TrimPrefix(frag, "branch="), nil
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// ownedPath records the files the sink wrote for an inventory, in the
// branch itself (committed with them).
func (s *Sink) ownedPath(id rows.Identity) string {
	part := func(v string) string {
		v = strings.Trim(unsafe.ReplaceAllString(v, "-"), ".-")
		if v == "" {
			return "-"
		}
		return v
	}
	cluster := s.cfg.Git.Layout.Cluster
	if cluster == "" {
		cluster = "default"
	}
	return path.Join(".kollect", "owned", part(cluster), part(id.Namespace), part(id.Name)+".json")
}

func (s *Sink) branch(id rows.Identity) string {
	if !s.cfg.MergeRequest {
		return s.cfg.Branch
	}
	return s.cfg.BranchPrefix + "/" + unsafe.ReplaceAllString(id.Namespace, "-") + "/" + unsafe.ReplaceAllString(id.Name, "-")
}

// KeepsTargets reports whether a partial snapshot can be exported: with a
// file per row and no index of them, the files of kept targets stay as
// they are. A document holds every target's rows.
func (s *Sink) KeepsTargets() bool { return s.cfg.Git.Layout.KeepsTargets() }

// Export makes the branch hold snap's files in one commit.
func (s *Sink) Export(ctx context.Context, snap *rows.Snapshot) (sinks.Ack, error) {
	return s.ExportParts(ctx, snap, nil)
}

// ExportParts is Export of a snapshot split by the binding's size ceiling:
// a document layout commits one document per part, in the one commit.
func (s *Sink) ExportParts(ctx context.Context, snap *rows.Snapshot, parts []*rows.Part) (sinks.Ack, error) {
	ack, err := s.export(ctx, snap, parts, false)
	if err != nil && errors.Is(err, sinks.ErrPermanent) && strings.Contains(err.Error(), "400") {
		// The branch changed under us (a file created or removed by hand):
		// list it again and rebuild the commit once.
		ack, err = s.export(ctx, snap, parts, true)
	}
	return ack, err
}

// Sink is a Parted Snapshot with these optional capabilities.
var (
	_ sinks.Parted = (*Sink)(nil)
	_ sinks.Prober = (*Sink)(nil)
	_ sinks.Keeper = (*Sink)(nil)
)

func (s *Sink) export(ctx context.Context, snap *rows.Snapshot, parts []*rows.Part, relist bool) (sinks.Ack, error) {
	id := snap.Inventory
	br := s.branch(id)
	h, err := s.host(ctx)
	if err != nil {
		return sinks.Ack{}, err
	}
	head, err := h.branch(ctx, br)
	exists := err == nil
	if err != nil && !errors.Is(err, errNotFound) {
		return sinks.Ack{}, err
	}
	start := ""
	if !exists && s.cfg.MergeRequest {
		start = s.cfg.TargetBranch
	}
	files := map[string][]byte{} // an empty snapshot removes every file the sink wrote
	if len(snap.Rows) > 0 {
		var err error
		if files, err = s.cfg.Git.Layout.Files(snap, parts); err != nil {
			return sinks.Ack{}, sinks.Permanent(err)
		}
	}
	ownedPath := s.ownedPath(id)
	if _, clash := files[ownedPath]; clash {
		return sinks.Ack{}, sinks.Permanent(fmt.Errorf("the layout writes %s, the file where the sink records what it owns: change the path template", ownedPath))
	}
	// owned: path → blob id of what this sink last wrote for the inventory.
	var owned map[string]string
	var last ownedRecord
	var present map[string]string // what the branch holds, when owned is unknown
	var record []byte             // the record as the branch holds it, nil when none
	ref := br
	if !exists {
		ref = start
	}
	if ref != "" {
		raw, err := h.rawFile(ctx, ref, ownedPath)
		if err == nil {
			record = raw
		}
		switch {
		case err == nil && !relist:
			if err := json.Unmarshal(raw, &last); err != nil {
				return sinks.Ack{}, sinks.Permanent(fmt.Errorf("%s on %s is not a Kollect record (%w): remove it", ownedPath, ref, err))
			}
			owned = last.Files
			if exists && last.Checksum == snap.Checksum && len(snap.Rows) > 0 {
				// The branch holds this export already; its merge request
				// may not be open yet (the step after the commit failed).
				return s.mergeRequest(ctx, id, br, head.Commit.ID, false, sinks.Ack{Rows: len(snap.Rows)})
			}
		case err == nil || errors.Is(err, errNotFound):
			if present, err = h.tree(ctx, ref, ""); err != nil {
				return sinks.Ack{}, err
			}
			if raw != nil && json.Unmarshal(raw, &last) == nil {
				owned = last.Files
			}
		default:
			return sinks.Ack{}, err
		}
	}
	// held is the blob id the branch holds at p, as far as the sink knows.
	held := func(p string) string {
		if present != nil {
			return present[p]
		}
		return owned[p]
	}
	exist := func(p string) bool {
		if present != nil {
			_, ok := present[p]
			return ok
		}
		_, ok := owned[p]
		return ok
	}
	next := make(map[string]string, len(files))
	var actions []action
	var bytes int64
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		content := files[p]
		blob := git.BlobID(content)
		next[p] = blob
		if (present != nil && present[p] == blob) || (present == nil && owned[p] == blob) {
			continue
		}
		a := action{Action: "create", FilePath: p, Content: base64.StdEncoding.EncodeToString(content), Encoding: "base64"}
		if exist(p) {
			a.Action, a.Blob = "update", held(p)
		}
		actions = append(actions, a)
		bytes += int64(len(content))
	}
	gone := make([]string, 0)
	for p, blob := range owned {
		_, keep := next[p]
		switch {
		case !keep && snap.Partial():
			// A file names no target: every file the sink owns stays,
			// the kept targets' and the rest alike, until a complete
			// export.
			next[p] = blob
		case !keep && exist(p):
			gone = append(gone, p)
		}
	}
	sort.Strings(gone)
	for _, p := range gone {
		actions = append(actions, action{Action: "delete", FilePath: p, Blob: held(p)})
	}
	written := len(actions)
	sum := snap.Checksum
	if snap.Partial() {
		sum = "" // the branch holds more than snap
	}
	nextRecord, _ := json.Marshal(ownedRecord{Checksum: sum, Files: next, Writer: s.writerOf(id, last.Writer)}) // keys sorted: stable bytes
	switch {
	case snap.Partial() && written == 0:
		// Nothing changed: the record of the last complete export still
		// describes the branch.
	case len(next) == 0:
		if record != nil {
			actions = append(actions, action{Action: "delete", FilePath: ownedPath, Blob: git.BlobID(record)})
		}
	case record == nil:
		actions = append(actions, action{Action: "create", FilePath: ownedPath, Content: base64.StdEncoding.EncodeToString(nextRecord), Encoding: "base64"})
	case string(record) != string(nextRecord):
		actions = append(actions, action{Action: "update", FilePath: ownedPath, Content: base64.StdEncoding.EncodeToString(nextRecord), Encoding: "base64", Blob: git.BlobID(record)})
	}
	ack := sinks.Ack{Rows: len(snap.Rows), Written: written, Bytes: bytes}
	if snap.Partial() {
		ack.Rows = len(next) // a file per row, the kept ones too
	}
	if len(actions) == 0 {
		if exists {
			return s.mergeRequest(ctx, id, br, head.Commit.ID, false, ack)
		}
		return ack, nil
	}
	commit, err := h.commit(ctx, commitRequest{Branch: br, StartBranch: start, Message: s.cfg.Git.Message(snap),
		AuthorName: s.cfg.Git.AuthorName, AuthorEmail: s.cfg.Git.AuthorEmail, Actions: actions})
	if err != nil {
		return sinks.Ack{}, err
	}
	ack.Changed, ack.Revision = true, commit
	return s.mergeRequest(ctx, id, br, commit, true, ack)
}

// mergeRequest, in merge-request mode, makes sure the export branch at
// head has a merge request before the export is acknowledged. After a
// commit it needs an open one. An export that committed nothing (a retry
// of one whose commit landed but whose merge request did not, or a
// restart) opens one only when the branch never had any, so a merge
// request merged or closed by a person is not opened again; and a branch
// whose head is the target's has nothing to merge.
func (s *Sink) mergeRequest(ctx context.Context, id rows.Identity, br, head string, committed bool, ack sinks.Ack) (sinks.Ack, error) {
	if !s.cfg.MergeRequest {
		return ack, nil
	}
	h, err := s.host(ctx)
	if err != nil {
		return sinks.Ack{}, err
	}
	target, err := h.branch(ctx, s.cfg.TargetBranch)
	if err != nil && !errors.Is(err, errNotFound) {
		return sinks.Ack{}, fmt.Errorf("committed %s, but reading the target branch: %w", head, err)
	}
	if err == nil && target.Commit.ID == head {
		return ack, nil
	}
	title := s.cfg.TitleTemplate
	if title == "" {
		title = "kollect inventory export: {namespace}/{name}"
	}
	title = strings.NewReplacer("{namespace}", id.Namespace, "{name}", id.Name).Replace(title)
	state := "opened"
	if !committed {
		state = ""
	}
	if _, err := h.ensureMergeRequest(ctx, br, s.cfg.TargetBranch, state, title); err != nil {
		return sinks.Ack{}, fmt.Errorf("committed %s, but the merge request: %w", head, err)
	}
	return ack, nil
}

// ownedRecord is what the sink commits beside an inventory's files: the
// checksum of the snapshot they hold and each file's blob id.
type ownedRecord struct {
	Checksum string            `json:"checksum"`
	Files    map[string]string `json:"files"`
	Writer   string            `json:"writer,omitempty"` // the operator that writes them (sinks.Claims)
}

// Probe checks that the project exists and the token reaches it.
func (s *Sink) Probe(ctx context.Context) error {
	h, err := s.host(ctx)
	if err != nil {
		return err
	}
	return h.projectInfo(ctx)
}
