package git

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// staleLockAge is how old a ref's lock file in a local remote must be to
// be called left behind: git holds one for a single ref transaction,
// milliseconds.
const staleLockAge = 10 * time.Second

// staleLockError is a push a local remote refused because a git process
// that did not finish left a ref's lock file behind. Retrying the push in
// a loop cannot help: the binding retries with its back-off, and the error
// says which file to remove. Kollect never removes it: a lock is the
// repository owner's to judge.
type staleLockError struct {
	locks []string
	age   time.Duration
	err   error
}

func (e *staleLockError) Error() string {
	return fmt.Sprintf("%v: lock file(s) %s older than %s, left by a git process that stopped before it finished; remove them if no git process is writing to this repository",
		e.err, strings.Join(e.locks, ", "), e.age)
}

func (e *staleLockError) Unwrap() error { return e.err }

func isStaleLock(err error) bool {
	var s *staleLockError
	return errors.As(err, &s)
}

// explainRefusal turns a push a local remote refused into a staleLockError
// when a lock of a ref it updates (or of HEAD, or of packed-refs, which an
// update of the branch HEAD names also locks) is older than staleLockAge;
// any other error is returned as it is. A remote server is left alone: its
// files are not this process's to read.
func (s *Sink) explainRefusal(err error, updates []refUpdate, now time.Time) error {
	if !isLocal(s.cfg.URL) || !isRejected(err) {
		return err
	}
	root := strings.TrimPrefix(s.cfg.URL, "file://")
	names := []string{"HEAD", "packed-refs"}
	for _, u := range updates {
		names = append(names, string(u.name))
	}
	var stale []string
	for _, dir := range []string{root, filepath.Join(root, ".git")} {
		for _, n := range names {
			p := filepath.Join(dir, filepath.FromSlash(n)+".lock")
			if fi, statErr := os.Stat(p); statErr == nil && now.Sub(fi.ModTime()) > staleLockAge {
				stale = append(stale, p)
			}
		}
	}
	if len(stale) == 0 {
		return err
	}
	return &staleLockError{locks: stale, age: staleLockAge, err: err}
}
