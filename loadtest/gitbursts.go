package main

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GitBurst is how soon one burst of changes reached the Git remote.
type GitBurst struct {
	Change  string        `json:"change"` // update, delete or create
	Objects int           `json:"objects"`
	Written time.Duration `json:"writtenNs"` // the first write to the last
	// InGit is the time from the last write to the API server until the
	// remote's main first held every change, read from the remote's own
	// log of pushes (not polled).
	InGit  time.Duration `json:"inGitAfterLastWriteNs"`
	Pushes []GitPush     `json:"pushes"`
}

// GitPush is one push to main during a burst, as the remote logged it.
type GitPush struct {
	After time.Duration `json:"afterLastWriteNs"` // negative: before the last write
	Files int           `json:"files"`
}

// gitBursts updates n objects as fast as the API server takes them, then
// deletes the same n, then creates them again, and measures each burst's
// arrival in Git. want is left as it was: every object present at v0.
func gitBursts(ctx context.Context, c client.Client, bare string, objs objects, n int, logf func(string, ...any)) ([]GitBurst, error) {
	n = min(n, objs.n)
	picked := make([]object, n)
	names := make(map[string]bool, n)
	for k := range n {
		picked[k] = objs.at((k * stride(objs.n)) % objs.n)
		names[picked[k].name] = true
	}
	phases := []struct {
		change string
		write  func(object) error
		holds  func(versions map[string]string) bool
	}{
		{"update", func(ob object) error { return ob.update(ctx, c, "burst") },
			func(v map[string]string) bool { return count(v, names, "burst") == n }},
		{"delete", func(ob object) error { return ob.delete(ctx, c) },
			func(v map[string]string) bool { return count(v, names, "") == 0 }},
		{"create", func(ob object) error { return ob.create(ctx, c, "v0") },
			func(v map[string]string) bool { return count(v, names, "v0") == n && len(v) == objs.n }},
	}
	var out []GitBurst
	for _, ph := range phases {
		first := time.Now()
		if err := writeAll(ctx, n, 0, func(i int) error { return ph.write(picked[i]) }); err != nil {
			return out, err
		}
		last := time.Now()
		b := GitBurst{Change: ph.change, Objects: n, Written: last.Sub(first)}
		at, pushes, err := awaitPush(ctx, bare, first, last, 2*time.Minute, ph.holds)
		b.Pushes = pushes
		if err != nil {
			return append(out, b), fmt.Errorf("%d %ss: %w", n, ph.change, err)
		}
		b.InGit = at.Sub(last)
		logf("git burst: %d %ss written in %v, all in Git %v after the last (%d pushes)", n, ph.change,
			b.Written.Round(time.Millisecond), b.InGit.Round(time.Millisecond), len(pushes))
		out = append(out, b)
	}
	return out, nil
}

// count is how many of names have version v in versions (path → version);
// with v empty, how many are present at all.
func count(versions map[string]string, names map[string]bool, v string) int {
	n := 0
	for path, got := range versions {
		if names[objectName(path)] && (v == "" || got == v) {
			n++
		}
	}
	return n
}

// awaitPush waits until a push to main made after since holds what holds
// asks of its files' versions, and returns when that push landed and the
// pushes from since on (their times after last). The pushes are read from
// the remote's log once it has been quiet for a second, so reading them
// never competes with the operator while it exports; the times are the
// remote's own.
func awaitPush(ctx context.Context, bare string, since, last time.Time, limit time.Duration, holds func(map[string]string) bool) (time.Time, []GitPush, error) {
	const quiet = time.Second
	var timeline []GitPush
	seen := 0
	for deadline := time.Now().Add(limit); ; time.Sleep(100 * time.Millisecond) {
		if ctx.Err() != nil || time.Now().After(deadline) {
			return time.Time{}, timeline, fmt.Errorf("no push held every change within %v", limit)
		}
		pushes, err := pushLog(bare, "refs/heads/main")
		if err != nil {
			return time.Time{}, timeline, err
		}
		if time.Since(last) < quiet || len(pushes) == seen || time.Since(pushes[len(pushes)-1].at) < quiet {
			continue
		}
		for ; seen < len(pushes); seen++ {
			p := pushes[seen]
			if p.at.Before(since) {
				continue
			}
			v, err := gitVersionsAt(bare, p.commit)
			if err != nil {
				return time.Time{}, timeline, err
			}
			timeline = append(timeline, GitPush{After: p.at.Sub(last), Files: len(v)})
			if holds(v) {
				return p.at, timeline, nil
			}
		}
	}
}
