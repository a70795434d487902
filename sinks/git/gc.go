package git

import (
	"errors"
	"fmt"
	"time"

	gogit "github.com/go-git/go-git/v5"
)

// gcEvery is how many commits a sink makes between two collections of its
// mirror's garbage.
const gcEvery = 200

// collectGarbage deletes the mirror's loose objects that no reference
// reaches: what failed, rejected or superseded exports wrote. The mirror
// then holds what the remote holds, however long the churn. It runs right
// after a successful push, under the export lock: the files and trees the
// sink remembers are then exactly those of the pushed commit, which the
// branch reaches, so none of them is garbage.
func (s *Sink) collectGarbage() error {
	err := s.repo.Prune(gogit.PruneOptions{OnlyObjectsOlderThan: time.Now(), Handler: s.repo.DeleteObject})
	if err != nil && !errors.Is(err, gogit.ErrLooseObjectsNotSupported) {
		return fmt.Errorf("git mirror gc: %w", err)
	}
	return nil
}

// maybeCollectGarbage counts a commit and, every cfg.GCEvery commits
// (gcEvery by default), collects garbage if the mirror may hold some the
// sink did not delete itself: it starts that way (a mirror directory may
// outlive a process), and becomes so when an export failed with objects
// already in the mirror, or another writer moved the branch. A single
// writer's exports leave none (dropRecord), and the collection walks
// every object the refs reach: 5-6 s of CPU at 250,000 files.
func (s *Sink) maybeCollectGarbage() error {
	every := s.cfg.GCEvery
	if every <= 0 {
		every = gcEvery
	}
	if s.commits++; s.commits%every != 0 || !s.dirty {
		return nil
	}
	if err := s.collectGarbage(); err != nil {
		return err
	}
	s.dirty = false
	return nil
}
