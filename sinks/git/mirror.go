package git

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// mirror is the local copy of one remote repository. With Config.Clients
// the sinks of this process that export to one remote share it, whatever
// their branch and credentials: a thousand inventories on one repository
// hold one mirror and fetch each new commit once, not once each. Sharing
// it across credentials gives no sink more than its own: every export
// reads only what its own fetch (with its own credentials) just brought
// to a ref, and pushes what it wrote itself.
//
// go-git's repository is not safe for concurrent use, so every use of it
// is under the turn: one export (or writer record) of the repository at a
// time, in this process. Exports to one branch would queue on the remote
// anyway (each lost race fetches, rebuilds and pushes again).
type mirror struct {
	repo *gogit.Repository
	objs *filesystem.Storage
	dir  string
	turn chan struct{}
	// kick wakes the collector (see collector) after a push; stop ends it,
	// and it closes stopped.
	kick          chan struct{}
	stop, stopped chan struct{}
	// shared says two sinks have held the mirror at once. Until then its
	// one sink deletes the garbage it knows it made (dropRecord); once
	// shared, an object one sink superseded may be another's (two
	// inventories owning the same paths have equal record trees), and
	// only the collection, which keeps whatever any ref reaches, deletes.
	users  atomic.Int32
	shared atomic.Bool

	// lists counts the remote's ref listings made through the mirror.
	lists atomic.Int32

	mu       sync.Mutex
	queue    []*request          // exports waiting for a batch (see batch.go)
	listings map[string]*listing // per credentials (see listing.go)

	// Under the turn.
	commits int // made since the mirror was opened, for garbage collection
	// collect is the collection of garbage due (made due at push dueAt),
	// which the collector runs once the exports pause.
	collect func() error
	dueAt   int
	// dirty says the mirror may hold garbage no export accounted for,
	// which the next collection due removes.
	dirty bool
	// dead are packed objects the sink superseded (see dropRecord), which
	// the next merge of their packs leaves out. An object staged or
	// fetched again leaves it (see stage.flush and forgetDead).
	dead map[plumbing.Hash]bool
	// unmergeable are packs a merge cannot take (see packs.go).
	unmergeable map[plumbing.Hash]bool
}

// openMirror opens (or creates) the mirror of url in dir.
func openMirror(dir, url string) (*mirror, error) {
	if err := dropTornRefs(dir); err != nil {
		return nil, fmt.Errorf("git mirror %s: %w", dir, err)
	}
	if err := dropRefsOfPending(dir); err != nil {
		return nil, fmt.Errorf("git mirror %s: %w", dir, err)
	}
	if err := dropTempPacks(dir); err != nil {
		return nil, fmt.Errorf("git mirror %s: %w", dir, err)
	}
	// A small object cache: go-git's default keeps up to 96 MiB of objects
	// alive, and a push walks every object of the tree.
	objs := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRU(4*cache.MiByte))
	repo, err := gogit.Open(objs, nil)
	if errors.Is(err, gogit.ErrRepositoryNotExists) {
		repo, err = gogit.Init(objs, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("git mirror %s: %w", dir, err)
	}
	_ = repo.DeleteRemote("origin")
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}}); err != nil {
		return nil, fmt.Errorf("git remote: %w", err)
	}
	// A mirror directory may hold an earlier process's garbage.
	m := &mirror{repo: repo, objs: objs, dir: dir, turn: make(chan struct{}, 1), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), stopped: make(chan struct{}), dirty: true,
		dead: map[plumbing.Hash]bool{}, unmergeable: map[plumbing.Hash]bool{}}
	go m.collector()
	return m, nil
}

// gcIdle is how long the exports of a mirror must pause before the
// collector runs a collection of garbage that is due.
const gcIdle = time.Second

// collector tidies the mirror once no export came for gcIdle: it merges
// the packs that hold dead objects without them (see dropDead), and runs
// a collection of garbage that is due (see maybeCollectGarbage). Taking
// the turn once per pause costs nothing when neither is needed.
func (m *mirror) collector() {
	defer close(m.stopped)
	idle := time.NewTimer(gcIdle)
	idle.Stop()
	defer idle.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-m.kick:
			idle.Reset(gcIdle)
		case <-idle.C:
			select {
			case <-m.stop:
				return
			case m.turn <- struct{}{}:
			}
			_ = m.tidy() // failing costs disk, never an export
			<-m.turn
		}
	}
}

// nudge tells the collector an export pushed.
func (m *mirror) nudge() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// tidy merges the packs holding dead objects without them and runs the
// collection of garbage due. Callers hold the turn.
func (m *mirror) tidy() error {
	if err := m.dropDead(); err != nil {
		return err
	}
	return m.collectNow()
}

// close stops the collector.
func (m *mirror) close() {
	close(m.stop)
	<-m.stopped
}

// acquireMirror returns the mirror cfg exports through and its release.
// Without Clients it is the sink's own, in cfg.MirrorDir (a temporary
// directory when unset). With Clients it is shared by the process's sinks
// of cfg.URL, kept in the MirrorDir of the first of them (callers give
// sinks of one remote one directory) and removed when the last one
// closes: a deleted inventory's mirror does not stay on the volume.
func acquireMirror(cfg Config) (*mirror, func(), error) {
	dir, temp := cfg.MirrorDir, false
	if dir == "" {
		d, err := os.MkdirTemp("", "kollect-git-")
		if err != nil {
			return nil, nil, fmt.Errorf("git mirror: %w", err)
		}
		dir, temp = d, true
	}
	opened := false
	v, release, err := cfg.Clients.Acquire("git-mirror", cfg.URL, func() (any, func(), error) {
		m, err := openMirror(dir, cfg.URL)
		if err != nil {
			return nil, nil, err
		}
		opened = true
		if cfg.Clients == nil && !temp {
			return m, m.close, nil // the sink's own directory outlives it
		}
		return m, func() { m.close(); _ = os.RemoveAll(dir) }, nil
	})
	if temp && !opened {
		_ = os.RemoveAll(dir) // another sink's mirror serves this one
	}
	if err != nil {
		return nil, nil, err
	}
	m := v.(*mirror)
	if m.users.Add(1) > 1 {
		m.shared.Store(true)
	}
	var once sync.Once
	return m, func() { once.Do(func() { m.users.Add(-1); release() }) }, nil
}

// dropTornRefs removes the empty ref files of a mirror. go-git writes a
// ref in place (truncate, then write), so a process killed in between
// leaves the file empty, and every later read of the refs fails ("ref
// file is empty"): the restarted operator could never fetch again. A
// mirror's refs are what the remote and its last fetch said; one dropped
// here comes back with the next fetch (the remote's branch, the owned
// records), and a HEAD that was torn is written again.
func dropTornRefs(dir string) error {
	if fi, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil && fi.Size() == 0 {
		if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/master\n"), 0o644); err != nil {
			return err
		}
	}
	err := filepath.WalkDir(filepath.Join(dir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if fi, err := d.Info(); err == nil && fi.Size() == 0 {
			return os.Remove(p)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil // a new mirror
	}
	return err
}

// pendingMarker is the file an earlier version of the sink kept in its
// mirror while objects it had pushed were not on disk yet.
const pendingMarker = "kollect-pending"

// dropRefsOfPending drops the refs of a mirror whose process was killed
// with objects pending (see pendingMarker): they may name commits, or
// reach trees, that never reached the disk. The objects stay; the next
// fetch brings the refs back and whatever the disk lacks with them.
func dropRefsOfPending(dir string) error {
	marker := filepath.Join(dir, pendingMarker)
	if _, err := os.Stat(marker); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	err := filepath.WalkDir(filepath.Join(dir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Remove(p)
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Remove(filepath.Join(dir, "packed-refs")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Remove(marker)
}
