package git

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"k8s.io/utils/clock"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// Config is a resolved Git sink.
type Config struct {
	// Clock stamps what the sink writes (row and message times, commit
	// times) and times its waits on the server (nil: the real clock).
	Clock      clock.PassiveClock
	URL        string // https://, http:// or file:// remote
	Branch     string // default main
	Username   string
	Token      string // password or token
	SSHKey     []byte // PEM private key for ssh:// remotes
	KnownHosts []byte // known_hosts lines for ssh:// remotes
	// InsecureHostKey skips SSH host-key checking (tls.insecureSkipVerify).
	InsecureHostKey bool
	// CABundle holds PEM roots an https:// remote's certificate may chain
	// to, besides the system's (tls.caBundle or tls.caSecretRef): a
	// self-hosted GitLab, Gitea or Bitbucket behind an internal CA.
	CABundle []byte
	// InsecureSkipTLS skips an https:// remote's certificate verification
	// (tls.insecureSkipVerify).
	InsecureSkipTLS bool
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
	MirrorDir                 string // local mirror; default a temp dir, removed on Close
	// CloneDepth is how many commits of the branch a mirror's first fetch
	// brings (spec.git.cloneDepth; 0: the whole history); later fetches
	// bring what is new. Sinks sharing a mirror share its first fetch.
	CloneDepth int
	// GCEvery is how many commits pass between two collections of the
	// mirror's garbage (default 200).
	GCEvery int
	Layout  Layout
	// Clients, when set, shares one mirror per remote among the sinks of
	// this process (see mirror): their exports take turns instead of
	// racing each other's pushes, and each commit is fetched once. The
	// mirror lives in the first sink's MirrorDir (give the sinks of one
	// remote one directory) and is removed when the last sink closes.
	Clients *sinks.Clients
}

// The optional capabilities this backend has.
var (
	_ sinks.Closer     = (*Sink)(nil)
	_ sinks.PartWanter = (*Sink)(nil)
	_ sinks.Keeper     = (*Sink)(nil)
)

// Sink exports snapshots to one branch of one remote.
type Sink struct {
	cfg     Config
	mu      sync.Mutex
	sshAuth transport.AuthMethod
	stage   *stage // the objects of the export under way
	// m is the mirror, used only while its turn is held; repo is m's.
	m       *mirror
	repo    *gogit.Repository
	release func()

	// The last pushed export, to work in proportion to change.
	lastCommit plumbing.Hash
	root       *dir        // its tree, as far as exports have read it
	prev       []*rows.Row // its rows in canonical order (perResource)
	// prevFiles[i] is prev[i]'s file (a slice beside prev, not a map: 40
	// bytes a row instead of about 110).
	prevFiles []renderedFile
	itemBytes int64 // the size of those files
	// written are the files this sink owns on the branch: it replaces or
	// removes them, and no other.
	written map[string]bool
	// recorded says the remote's owned ref lists written (as last pushed
	// or read): an unchanged list is not written again, and a changed one
	// is edited from ownedFiles, its files/ tree (zero when it must be
	// written whole: read in an earlier version's format).
	recorded   bool
	ownedFiles plumbing.Hash
	// summary are the files of the last render that describe the whole
	// snapshot (a JSON document, a split index): they carry the export
	// time, so an unchanged snapshot must not rewrite them.
	summary map[string]string // path → the checksum the file carries
	// ownedHead is the owned record's commit and root tree as last read
	// or pushed.
	ownedHead record
	// ownedPrefetched says the batch's leader fetched the record the
	// next export reads (see loadOwned).
	ownedPrefetched int8
}

type renderedFile struct {
	path string
	hash plumbing.Hash
	size int32 // a file past 2 GiB is past any export's ceiling
}

var _ sinks.Snapshot = (*Sink)(nil)

func (cfg Config) withDefaults() Config {
	cfg.Clock = sinks.OrRealClock(cfg.Clock)
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

// New opens (or creates) the local mirror for cfg, or joins the one this
// process's sinks of cfg.URL share (Config.Clients).
func New(cfg Config) (*Sink, error) {
	cfg = cfg.withDefaults()
	if err := cfg.checkTransport(); err != nil {
		return nil, err
	}
	s := &Sink{cfg: cfg}
	if strings.HasPrefix(cfg.URL, "ssh://") {
		var err error
		if s.sshAuth, err = sshAuth(cfg); err != nil {
			return nil, err
		}
	}
	m, release, err := acquireMirror(cfg)
	if err != nil {
		return nil, err
	}
	s.m, s.repo, s.release = m, m.repo, release
	return s, nil
}

// Close gives the mirror back; the last sink of a shared one removes it.
func (s *Sink) Close() { s.release() }

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
	return s.m.export(ctx, &request{s: s, ctx: ctx, snap: snap, parts: parts, done: make(chan result, 1)})
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

// KeepsTargets reports whether a partial snapshot can be exported: with a
// file per row and no index of them, the files of kept targets stay as
// they are. A document holds every target's rows.
func (s *Sink) KeepsTargets() bool { return s.cfg.Layout.KeepsTargets() }

// WantsParts reports whether the export of snap depends on its parts: a
// file per row (perResource, set or detected) is the same files however
// the binding's ceiling would split the snapshot; documents are split.
func (s *Sink) WantsParts(snap *rows.Snapshot) bool {
	return s.cfg.Layout.resolve(snap).Mode != "perResource"
}

// built is one sink's export built on a tip of the branch, not pushed
// yet: its commit (zero when the tip already holds the snapshot), the
// objects the remote lacks, and the update of its owned record.
type built struct {
	s      *Sink
	ack    sinks.Ack
	base   plumbing.Hash // the tip it was built on
	commit plumbing.Hash
	root   *dir
	pl     *plan
	// objects are what the remote lacks of the commit (the commit last)
	// and of the owned record; owned is the record's update, if any.
	objects []plumbing.Hash
	owned   ownedList
}

// build makes the export of snap on the branch tip base, in the stage
// the batch's sinks share; nothing is pushed or applied yet.
func (s *Sink) build(ctx context.Context, snap *rows.Snapshot, parts []*rows.Part, base plumbing.Hash) (*built, error) {
	if s.lastCommit != plumbing.ZeroHash && base != s.lastCommit {
		s.m.dirty = true // another writer moved the branch: perhaps over this sink's commits
	}
	root, err := s.treeAt(base)
	if err != nil {
		return nil, err
	}
	edit := newTreeEdit(s.stage, root)
	l := s.cfg.Layout.resolve(snap)
	var pl *plan
	if l.Mode == "perResource" {
		pl, err = s.planItems(ctx, l, snap, base, edit)
	} else {
		pl, err = s.planDocuments(l, snap, parts, edit)
	}
	if err != nil {
		return nil, err
	}
	if err := s.keepUnchangedSummaries(edit, pl.files); err != nil {
		return nil, err
	}
	for _, p := range pl.remove {
		if err := edit.remove(p); err != nil {
			return nil, err
		}
	}
	for p, h := range pl.files {
		if err := edit.set(p, h); errors.Is(err, errCollision) {
			return nil, sinks.Permanent(err)
		} else if err != nil {
			return nil, err
		}
	}
	tree, err := edit.write()
	if err != nil {
		return nil, err
	}
	b := &built{s: s, ack: sinks.Ack{Rows: len(snap.Rows), Bytes: pl.bytes, Written: edit.changed}, base: base, root: edit.root, pl: pl}
	if base != plumbing.ZeroHash && tree == root.hash {
		b.ack.Written = 0
		return b, nil // the remote already holds this content
	}
	if b.commit, err = s.commit(tree, base, snap); err != nil {
		return nil, err
	}
	b.objects = append(slices.Collect(maps.Keys(edit.blobs)), edit.trees...)
	if l.Mode == "perResource" && pl.owned != nil {
		if b.owned, err = s.ownedCommit(snap.Inventory, pl.owned); err != nil {
			return nil, err
		}
		b.objects = append(b.objects, b.owned.objects...)
	}
	b.objects = append(b.objects, b.commit)
	b.ack.Changed, b.ack.Revision = true, b.commit.String()
	return b, nil
}

// landed records a built export the remote now holds (settled says the
// mirror holds it too).
func (b *built) landed(settled bool) {
	s := b.s
	if !settled {
		// The remote holds the export and the mirror does not: the next
		// export starts over from the remote's branch and owned list.
		s.lastCommit, s.root, s.prev, s.prevFiles, s.written, s.recorded = plumbing.ZeroHash, nil, nil, nil, nil, false
		s.ownedHead, s.m.dirty = record{}, true
		return
	}
	if b.commit == plumbing.ZeroHash {
		s.pushed(b.base, b.root, b.pl)
		return
	}
	if b.owned.commit != plumbing.ZeroHash {
		s.recorded, s.ownedFiles = true, b.owned.files
		s.dropRecord(b.owned)
	}
	s.pushed(b.commit, b.root, b.pl)
}

// settle stores a pushed export's objects in the mirror and points the
// mirror's refs where the remote's now are.
func (s *Sink) settle(updates []refUpdate) error {
	if err := s.stage.flush(); err != nil {
		return err
	}
	for _, u := range updates {
		if u.record {
			continue
		}
		refs := []plumbing.ReferenceName{u.name}
		if u.name == plumbing.NewBranchReferenceName(s.cfg.Branch) {
			refs = append(refs, s.remoteRef())
		}
		for _, r := range refs {
			if err := s.repo.Storer.SetReference(plumbing.NewHashReference(r, u.to)); err != nil {
				return fmt.Errorf("git mirror: update %s: %w", r, err)
			}
		}
	}
	return nil
}

// pushed records an export the remote holds.
func (s *Sink) pushed(commit plumbing.Hash, root *dir, pl *plan) {
	s.lastCommit, s.root = commit, root
	pl.apply()
}

// treeAt is the tree of the branch tip base: the one the sink holds when
// it pushed base itself, else read from the mirror as exports need it.
func (s *Sink) treeAt(base plumbing.Hash) (*dir, error) {
	switch {
	case base == plumbing.ZeroHash:
		return &dir{read: true}, nil
	case base == s.lastCommit && s.root != nil:
		return s.root, nil
	}
	c, err := object.GetCommit(s.stage, base) // a batch-mate's commit is still staged
	if err != nil {
		return nil, fmt.Errorf("git: read commit %s: %w", base, err)
	}
	return &dir{hash: c.TreeHash}, nil
}

func (s *Sink) remoteRef() plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName("origin", s.cfg.Branch)
}

// fetch brings the remote branch tip into the mirror; an empty remote or a
// missing branch gives the zero hash. A mirror that has not fetched the
// branch yet fetches CloneDepth commits of it.
func (s *Sink) fetch(ctx context.Context) (plumbing.Hash, error) {
	spec := config.RefSpec(fmt.Sprintf("+refs/heads/%s:%s", s.cfg.Branch, s.remoteRef()))
	ctx, cancel := s.transfer(ctx)
	defer cancel()
	opts := &gogit.FetchOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Auth: s.auth(), ProxyOptions: sshProxy(s.cfg.URL), Force: true,
		CABundle: s.cfg.CABundle, InsecureSkipTLS: s.cfg.InsecureSkipTLS}
	if _, err := s.repo.Reference(s.remoteRef(), false); err != nil {
		opts.Depth = s.cfg.CloneDepth
	}
	err := s.repo.FetchContext(ctx, opts)
	switch {
	case err == nil:
		s.m.forgetDead()
	case errors.Is(err, gogit.NoErrAlreadyUpToDate):
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
// ref" when another push holds or has just changed the branch (reported
// as "atomic transaction failed" when the push moves the branch and the
// owned list together).
func isRejected(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return errors.Is(err, gogit.ErrNonFastForwardUpdate) || strings.Contains(msg, "non-fast-forward") ||
		strings.Contains(msg, "fetch first") || strings.Contains(msg, "failed to update ref") ||
		strings.Contains(msg, "atomic transaction failed")
}

func (s *Sink) commit(tree, parent plumbing.Hash, snap *rows.Snapshot) (plumbing.Hash, error) {
	now := s.cfg.Clock.Now()
	sig := object.Signature{Name: s.cfg.AuthorName, Email: s.cfg.AuthorEmail, When: now}
	c := &object.Commit{Author: sig, Committer: sig, Message: s.message(snap), TreeHash: tree}
	if parent != plumbing.ZeroHash {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	obj := s.stage.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git: encode commit: %w", err)
	}
	h, err := s.stage.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git: store commit: %w", err)
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

// localTransferTimeout bounds a fetch or push to a local remote, which
// is not canceled (see transfer). A first push of a million files takes
// minutes (the remote's git indexes a pack of a million objects), and a
// push cut short by this bound hangs in go-git as a canceled one does.
const localTransferTimeout = 15 * time.Minute

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

// redact drops userinfo from a URL before it reaches an error message:
// everything up to the last @ before the query (a password may hold @ and
// even /; a @ in the path costs only the host in the message).
func redact(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return u
	}
	rest := u[i+3:]
	authority := rest
	if end := strings.IndexAny(rest, "?#"); end >= 0 {
		authority = rest[:end]
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		return u[:i+3] + rest[at+1:]
	}
	return u
}
