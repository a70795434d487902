package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"k8s.io/apimachinery/pkg/util/wait"

	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks"
)

// Config is a resolved Git sink.
type Config struct {
	URL        string // https://, http:// or file:// remote
	Branch     string // default main
	Username   string
	Token      string // password or token
	SSHKey     []byte // PEM private key for ssh:// remotes
	KnownHosts []byte // known_hosts lines for ssh:// remotes
	// InsecureHostKey skips SSH host-key checking (tls.insecureSkipVerify).
	InsecureHostKey bool
	AuthorName      string // default kollect
	AuthorEmail     string // default kollect@kollect.dev
	CommitMessage   string // subject template
	CommitBody      string
	Trailers        []string
	ForcePush       bool
	// AllowPlainHTTPCredentials lets a token or password travel over
	// plain http:// (the sink's kollect.dev/allow-plain-http-credentials
	// annotation); refused otherwise.
	AllowPlainHTTPCredentials bool
	SinkName                  string
	MirrorDir                 string // local mirror; default a temp dir
	// GCEvery is how many commits pass between two collections of the
	// mirror's garbage (default 200).
	GCEvery int
	Layout  Layout
}

// Sink exports snapshots to one branch of one remote.
type Sink struct {
	cfg     Config
	mu      sync.Mutex
	repo    *gogit.Repository
	sshAuth transport.AuthMethod

	// State of the last successful export, to work in proportion to change.
	lastCommit plumbing.Hash
	lastFlat   map[string]entry
	written    map[string]bool
	// recorded is the list of owned files the remote's owned ref holds, as
	// last pushed or read: an unchanged list is not written again.
	recorded map[string]bool
	rendered map[*rows.Row]renderedFile
	// summary are the files of the last render that describe the whole
	// snapshot (a JSON document, a split index): they carry the export
	// time, so an unchanged snapshot must not rewrite them.
	summary map[string]string // path → the checksum the file carries
	commits int               // made by this process, for garbage collection
}

type entry struct {
	hash plumbing.Hash
	mode filemode.FileMode
}

type renderedFile struct {
	path string
	hash plumbing.Hash
	size int
}

var _ sinks.Snapshot = (*Sink)(nil)

func (cfg Config) withDefaults() Config {
	if cfg.Branch == "" {
		cfg.Branch = "main"
	}
	if cfg.AuthorName == "" {
		cfg.AuthorName = "kollect"
	}
	if cfg.AuthorEmail == "" {
		cfg.AuthorEmail = "kollect@kollect.dev"
	}
	if cfg.CommitMessage == "" {
		cfg.CommitMessage = "chore({cluster}/{namespace}/{name}): export {itemCount} items @ {checksumShort}"
	}
	return cfg
}

// New opens (or creates) the local mirror for cfg.
func New(cfg Config) (*Sink, error) {
	cfg = cfg.withDefaults()
	dir := cfg.MirrorDir
	if dir == "" {
		d, err := os.MkdirTemp("", "kollect-git-")
		if err != nil {
			return nil, fmt.Errorf("git mirror: %w", err)
		}
		dir = d
	}
	// A small object cache: go-git's default keeps up to 96 MiB of objects
	// alive, and a push walks every object of the tree.
	st := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRU(4*cache.MiByte))
	repo, err := gogit.Open(st, nil)
	if errors.Is(err, gogit.ErrRepositoryNotExists) {
		repo, err = gogit.Init(st, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("git mirror %s: %w", dir, err)
	}
	if err := cfg.checkTransport(); err != nil {
		return nil, err
	}
	_ = repo.DeleteRemote("origin")
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{cfg.URL}}); err != nil {
		return nil, fmt.Errorf("git remote: %w", err)
	}
	// A push carries small files, new or changed: searching them for deltas
	// against each other (go-git's default window of 10) costs far more CPU
	// than it saves bytes, and it grew with the tree, not with the change.
	rc, err := repo.Config()
	if err != nil {
		return nil, fmt.Errorf("git mirror config: %w", err)
	}
	if rc.Pack.Window != 0 {
		rc.Pack.Window = 0
		if err := repo.SetConfig(rc); err != nil {
			return nil, fmt.Errorf("git mirror config: %w", err)
		}
	}
	s := &Sink{cfg: cfg, repo: repo, rendered: map[*rows.Row]renderedFile{}}
	if strings.HasPrefix(cfg.URL, "ssh://") {
		if s.sshAuth, err = sshAuth(cfg); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Sink) auth() transport.AuthMethod {
	if strings.HasPrefix(s.cfg.URL, "ssh://") {
		return s.sshAuth
	}
	if s.cfg.Token == "" || strings.HasPrefix(s.cfg.URL, "file://") {
		return nil // local repositories take no credentials
	}
	user := s.cfg.Username
	if user == "" {
		user = "x-access-token"
	}
	return &githttp.BasicAuth{Username: user, Password: s.cfg.Token}
}

// Export makes the branch hold exactly the files of snap, in one commit.
func (s *Sink) Export(ctx context.Context, snap *rows.Snapshot) (sinks.Ack, error) {
	return s.ExportParts(ctx, snap, nil)
}

// ExportParts is Export of a snapshot split by the binding's size ceiling:
// a document layout writes one document per part
// (<name>.part-NNNN-of-MMMM<ext>), all in the one commit; tree layouts
// write a file per row whatever the parts.
func (s *Sink) ExportParts(ctx context.Context, snap *rows.Snapshot, parts []*rows.Part) (sinks.Ack, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	giveUp := time.Now().Add(pushRetryFor)
	pause := wait.Backoff{Duration: pushBackoff, Factor: 2, Jitter: 1, Cap: pushBackoffMax, Steps: math.MaxInt32}.DelayFunc()
	for conflicts := 0; ; conflicts++ {
		ack, err := s.export(ctx, snap, parts)
		ack.Conflicts = conflicts
		if !isRejected(err) || time.Now().After(giveUp) {
			return ack, err
		}
		// Another writer pushed first (another cluster of a fleet, another
		// inventory on the branch): build the commit again on the new tip,
		// after a growing, jittered pause so the writers do not collide
		// again in step.
		s.lastCommit, s.lastFlat = plumbing.ZeroHash, nil
		t := time.NewTimer(pause())
		select {
		case <-ctx.Done():
			t.Stop()
			return ack, err
		case <-t.C:
		}
	}
}

// A push another writer beat is rebuilt on the new tip and pushed again
// until it lands, after pushBackoff, doubling up to pushBackoffMax, each
// plus up to as much again at random; for pushRetryFor at most (a branch
// that keeps refusing, such as a lock left by a crashed git, then fails the
// export with git's own message, and the binding retries it later).
const (
	pushBackoff    = 25 * time.Millisecond
	pushBackoffMax = time.Second
	pushRetryFor   = time.Minute
)

var _ sinks.Parted = (*Sink)(nil)

func (s *Sink) export(ctx context.Context, snap *rows.Snapshot, parts []*rows.Part) (sinks.Ack, error) {
	base, err := s.fetch(ctx)
	if err != nil {
		return sinks.Ack{}, err
	}
	flat, err := s.flatten(base)
	if err != nil {
		return sinks.Ack{}, err
	}
	files, bytes, err := s.render(snap, parts)
	if err != nil {
		return sinks.Ack{}, sinks.Permanent(err)
	}
	s.keepUnchangedSummaries(snap, flat, files)
	if s.written == nil && s.cfg.Layout.Mode == "perResource" {
		// Restarted: what this sink owns is recorded in the remote.
		if s.written, err = s.loadOwned(ctx, snap.Inventory); err != nil {
			return sinks.Ack{}, err
		}
		s.recorded = s.written
	}
	next := make(map[string]entry, len(flat)+len(files))
	for p, e := range flat {
		if !s.wroteBefore(snap, p) {
			next[p] = e
		}
	}
	written := make(map[string]bool, len(files))
	for p, h := range files {
		next[p] = entry{hash: h, mode: filemode.Regular}
		written[p] = true
	}
	root, err := s.writeTrees(next)
	if err != nil {
		return sinks.Ack{}, err
	}
	ack := sinks.Ack{Rows: len(snap.Rows), Bytes: bytes, Written: changedFiles(flat, next)}
	if base != plumbing.ZeroHash {
		if c, err := s.repo.CommitObject(base); err == nil && c.TreeHash == root {
			s.remember(base, next, written)
			ack.Written = 0
			return ack, nil // the remote already holds this content
		}
	}
	commit, err := s.commit(root, base, snap)
	if err != nil {
		return sinks.Ack{}, err
	}
	var owned plumbing.ReferenceName
	if s.cfg.Layout.Mode == "perResource" && !maps.Equal(written, s.recorded) {
		if owned, err = s.ownedCommit(snap.Inventory, written); err != nil {
			return sinks.Ack{}, err
		}
	}
	if err := s.push(ctx, commit, base == plumbing.ZeroHash, owned); err != nil {
		return sinks.Ack{}, err
	}
	if owned != "" {
		s.recorded = written
	}
	s.remember(commit, next, written)
	ack.Changed, ack.Revision = true, commit.String()
	// Pushed: a failed collection costs disk, never the export.
	_ = s.maybeCollectGarbage()
	return ack, nil
}

// changedFiles counts the files added, changed or removed between two
// trees.
func changedFiles(before, after map[string]entry) int {
	n := 0
	for p, e := range after {
		if b, ok := before[p]; !ok || b.hash != e.hash {
			n++
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			n++
		}
	}
	return n
}

func (s *Sink) remember(commit plumbing.Hash, flat map[string]entry, written map[string]bool) {
	s.lastCommit, s.lastFlat, s.written = commit, flat, written
}

// wroteBefore reports whether path is a file this sink wrote before (and
// so is replaced or removed by this export). Until the sink has exported
// once in this process it does not know, so it claims the files its layout
// can produce: the document, or files with the layout's extension under the
// item tree's fixed prefix. A row deleted while the operator was down thus
// loses its file on the first export after a restart.
func (s *Sink) wroteBefore(snap *rows.Snapshot, p string) bool {
	if s.written != nil {
		return s.written[p]
	}
	l := s.cfg.Layout
	if l.Mode != "perResource" {
		doc, _ := l.documentFile(snap.Inventory)
		return p == doc || isPartOf(doc, p)
	}
	// No record in the remote (written by an older version): claim the
	// files under the item tree's fixed prefix only when that prefix is
	// this inventory's own, so a shared tree keeps others' files.
	prefix := l.ownedPrefix(snap.Inventory)
	return prefix != "" && l.prefixIsOwn(snap.Inventory, prefix) && strings.HasPrefix(p, prefix) && strings.HasSuffix(p, l.extension())
}

func (s *Sink) remoteRef() plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName("origin", s.cfg.Branch)
}

// fetch brings the remote branch tip into the mirror; an empty remote or a
// missing branch gives the zero hash.
func (s *Sink) fetch(ctx context.Context) (plumbing.Hash, error) {
	spec := config.RefSpec(fmt.Sprintf("+refs/heads/%s:%s", s.cfg.Branch, s.remoteRef()))
	ctx, cancel := s.transfer(ctx)
	defer cancel()
	err := s.repo.FetchContext(ctx, &gogit.FetchOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Auth: s.auth(), ProxyOptions: sshProxy(s.cfg.URL), Force: true})
	switch {
	case err == nil, errors.Is(err, gogit.NoErrAlreadyUpToDate):
	case errors.Is(err, transport.ErrEmptyRemoteRepository), isMissingRef(err):
		return plumbing.ZeroHash, nil
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return plumbing.ZeroHash, sinks.Permanent(fmt.Errorf("git fetch %s: %w", redact(s.cfg.URL), err))
	default:
		return plumbing.ZeroHash, fmt.Errorf("git fetch %s: %w", redact(s.cfg.URL), err)
	}
	ref, err := s.repo.Reference(s.remoteRef(), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git: read %s: %w", s.remoteRef(), err)
	}
	return ref.Hash(), nil
}

func isMissingRef(err error) bool {
	return err != nil && strings.Contains(err.Error(), "couldn't find remote ref")
}

// isRejected reports whether the remote refused a push because the branch
// moved meanwhile: a non-fast-forward update, or git's "failed to update
// ref" when another push holds or has just changed the branch.
func isRejected(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return errors.Is(err, gogit.ErrNonFastForwardUpdate) || strings.Contains(msg, "non-fast-forward") ||
		strings.Contains(msg, "fetch first") || strings.Contains(msg, "failed to update ref")
}

// flatten lists every file of the base commit's tree (path → blob), reusing
// the previous export's listing when the remote has not moved.
func (s *Sink) flatten(base plumbing.Hash) (map[string]entry, error) {
	if base == plumbing.ZeroHash {
		return map[string]entry{}, nil
	}
	if base == s.lastCommit && s.lastFlat != nil {
		return s.lastFlat, nil
	}
	commit, err := s.repo.CommitObject(base)
	if err != nil {
		return nil, fmt.Errorf("git: read commit %s: %w", base, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("git: read tree: %w", err)
	}
	flat := map[string]entry{}
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if err != nil {
			break
		}
		if e.Mode != filemode.Dir {
			flat[name] = entry{hash: e.Hash, mode: e.Mode}
		}
	}
	return flat, nil
}

// render writes the blobs of this export and returns path → blob hash.
func (s *Sink) render(snap *rows.Snapshot, parts []*rows.Part) (map[string]plumbing.Hash, int64, error) {
	l := s.cfg.Layout
	if l.Mode == "" {
		if key, ok := manifestKey(snap); ok {
			// Rows of a Resource-export profile become a manifest tree
			// (SEMANTICS §11.3 auto-detection).
			l.Mode, l.Content, l.ManifestKey = "perResource", "manifest", key
		}
	}
	files := map[string]plumbing.Hash{}
	s.summary = map[string]string{}
	var total int64
	if l.Mode != "perResource" {
		for _, part := range wholeOr(snap, parts) {
			p, data, err := l.renderPart(part)
			if err != nil {
				return nil, 0, err
			}
			h, err := s.blob(data)
			if err != nil {
				return nil, 0, err
			}
			files[p] = h
			total += int64(len(data))
			if l.Format == "json" {
				s.summary[p] = part.Checksum // the envelope carries exportedAt
			}
		}
		return files, total, nil
	}
	next := make(map[*rows.Row]renderedFile, len(snap.Rows))
	for _, r := range snap.Rows {
		rf, ok := s.rendered[r]
		if !ok {
			p, err := l.itemPath(snap.Inventory, r)
			if err != nil {
				return nil, 0, err
			}
			data, err := l.renderItem(r)
			if err != nil {
				return nil, 0, err
			}
			h, err := s.blob(data)
			if err != nil {
				return nil, 0, err
			}
			rf = renderedFile{path: p, hash: h, size: len(data)}
		}
		if _, dup := files[rf.path]; dup {
			return nil, 0, fmt.Errorf("layout collision: two rows render to %s", rf.path)
		}
		files[rf.path] = rf.hash
		total += int64(rf.size)
		next[r] = rf
	}
	s.rendered = next
	if l.Index {
		p, data, err := l.renderIndex(snap, files, next)
		if err != nil {
			return nil, 0, err
		}
		if _, dup := files[p]; dup {
			return nil, 0, fmt.Errorf("layout collision: the index path %s is also an item path", p)
		}
		h, err := s.blob(data)
		if err != nil {
			return nil, 0, err
		}
		files[p] = h
		s.summary[p] = snap.Checksum // the index carries exportedAt
		total += int64(len(data))
	}
	return files, total, nil
}

// keepUnchangedSummaries keeps the branch's version of a summary file
// (a JSON document, a split index) when it already describes this
// snapshot (same checksum): only its export time would change, and a
// restart or a repeated export must not make a commit for that.
func (s *Sink) keepUnchangedSummaries(snap *rows.Snapshot, flat map[string]entry, files map[string]plumbing.Hash) {
	for p, sum := range s.summary {
		old, ok := flat[p]
		if !ok || old.hash == files[p] {
			continue
		}
		b, err := s.repo.BlobObject(old.hash)
		if err != nil {
			continue
		}
		r, err := b.Reader()
		if err != nil {
			continue
		}
		head := make([]byte, 512) // the checksum comes first in both
		n, _ := io.ReadFull(r, head)
		r.Close()
		if bytes.Contains(head[:n], []byte(sum)) {
			files[p] = old.hash
		}
	}
}

func (s *Sink) blob(data []byte) (plumbing.Hash, error) {
	obj := s.repo.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.repo.Storer.SetEncodedObject(obj)
}

// writeTrees stores the tree objects for flat and returns the root hash.
func (s *Sink) writeTrees(flat map[string]entry) (plumbing.Hash, error) {
	type dir struct {
		files map[string]entry
		dirs  map[string]*dir
	}
	newDir := func() *dir { return &dir{files: map[string]entry{}, dirs: map[string]*dir{}} }
	root := newDir()
	for p, e := range flat {
		d := root
		parts := strings.Split(p, "/")
		for _, seg := range parts[:len(parts)-1] {
			if d.dirs[seg] == nil {
				d.dirs[seg] = newDir()
			}
			d = d.dirs[seg]
		}
		d.files[parts[len(parts)-1]] = e
	}
	var write func(d *dir) (plumbing.Hash, error)
	write = func(d *dir) (plumbing.Hash, error) {
		var entries []object.TreeEntry
		for name, e := range d.files {
			entries = append(entries, object.TreeEntry{Name: name, Mode: e.mode, Hash: e.hash})
		}
		for name, sub := range d.dirs {
			h, err := write(sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
		// Git orders entries by name, directories as if followed by "/".
		sort.Slice(entries, func(i, j int) bool { return sortName(entries[i]) < sortName(entries[j]) })
		obj := s.repo.Storer.NewEncodedObject()
		if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
			return plumbing.ZeroHash, err
		}
		return s.repo.Storer.SetEncodedObject(obj)
	}
	return write(root)
}

func sortName(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

func (s *Sink) commit(tree, parent plumbing.Hash, snap *rows.Snapshot) (plumbing.Hash, error) {
	now := time.Now()
	sig := object.Signature{Name: s.cfg.AuthorName, Email: s.cfg.AuthorEmail, When: now}
	c := &object.Commit{Author: sig, Committer: sig, Message: s.message(snap), TreeHash: tree}
	if parent != plumbing.ZeroHash {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	obj := s.repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git: encode commit: %w", err)
	}
	h, err := s.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git: store commit: %w", err)
	}
	ref := plumbing.NewHashReference(plumbing.NewBranchReferenceName(s.cfg.Branch), h)
	if err := s.repo.Storer.SetReference(ref); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git: update branch: %w", err)
	}
	return h, nil
}

func (s *Sink) message(snap *rows.Snapshot) string {
	cluster := s.cfg.Layout.cluster()
	r := strings.NewReplacer(
		"{namespace}", snap.Inventory.Namespace, "{name}", snap.Inventory.Name, "{cluster}", cluster,
		"{generation}", fmt.Sprint(snap.Inventory.Generation), "{exportGeneration}", fmt.Sprint(snap.Inventory.Generation),
		"{itemCount}", fmt.Sprint(len(snap.Rows)), "{checksum}", snap.Checksum, "{checksumShort}", snap.ChecksumShort(),
		"{exportedAt}", snap.ExportedAt.Format(time.RFC3339), "{sink}", s.cfg.SinkName,
		"{path}", path.Dir(s.cfg.Layout.documentPath(snap.Inventory)),
	)
	msg := r.Replace(s.cfg.CommitMessage)
	if s.cfg.CommitBody != "" {
		msg += "\n\n" + r.Replace(s.cfg.CommitBody)
	}
	for _, t := range s.cfg.Trailers {
		if t = strings.TrimSpace(r.Replace(t)); t != "" {
			msg += "\n\n" + t
		}
	}
	return msg + "\n"
}

func (s *Sink) push(ctx context.Context, commit plumbing.Hash, newBranch bool, owned plumbing.ReferenceName) error {
	spec := fmt.Sprintf("refs/heads/%s:refs/heads/%s", s.cfg.Branch, s.cfg.Branch)
	if s.cfg.ForcePush || newBranch {
		spec = "+" + spec
	}
	specs := []config.RefSpec{config.RefSpec(spec)}
	if owned != "" {
		specs = append(specs, config.RefSpec("+"+string(owned)+":"+string(owned)))
	}
	ctx, cancel := s.transfer(ctx)
	defer cancel()
	err := s.repo.PushContext(ctx, &gogit.PushOptions{RemoteName: "origin", RefSpecs: specs, Auth: s.auth(), ProxyOptions: sshProxy(s.cfg.URL)})
	switch {
	case err == nil, errors.Is(err, gogit.NoErrAlreadyUpToDate):
		return nil
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return sinks.Permanent(fmt.Errorf("git push %s: %w", redact(s.cfg.URL), err))
	}
	return fmt.Errorf("git push %s: %w", redact(s.cfg.URL), err)
}

// localTransferTimeout bounds a fetch or push to a local remote, which
// is not canceled (see transfer).
const localTransferTimeout = 2 * time.Minute

// transfer is the context of one fetch or push. A local remote (file://)
// is served by git processes this one starts, and go-git kills them when
// the context ends: a receive-pack killed while it holds the branch's lock
// leaves refs/heads/<branch>.lock behind, and every later push fails until
// someone removes it (a SIGTERM during an export did exactly that). So a
// transfer to a local remote runs to its end, bounded by
// localTransferTimeout, whatever happens to the export's context; a remote
// server handles a dropped connection itself.
func (s *Sink) transfer(ctx context.Context) (context.Context, context.CancelFunc) {
	if !isLocal(s.cfg.URL) {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), localTransferTimeout)
}

// isLocal reports whether a remote URL names a repository on this machine.
func isLocal(u string) bool {
	return strings.HasPrefix(u, "file://") || strings.HasPrefix(u, "/")
}

// redact drops userinfo from a URL before it reaches an error message.
func redact(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		if at := strings.Index(u[i+3:], "@"); at >= 0 {
			return u[:i+3] + u[i+3+at+1:]
		}
	}
	return u
}
