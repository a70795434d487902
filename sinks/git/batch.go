package git

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/apimachinery/pkg/util/wait"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// Exports through one mirror are batched. An export queues its request;
// whichever waiting export takes the mirror's turn leads: it takes every
// request queued, and for each branch (and credentials) fetches once,
// builds each request's commit on the one before (every inventory keeps a
// commit of its own, with its own message), and pushes them all at once,
// the owned records with them, atomically. A thousand inventories
// exporting after a restart make a few pushes, not a thousand, each of
// which the next would have had to fetch. A request's own failure (a
// layout collision, an unreadable record) is its alone; a refused push
// rebuilds the whole batch on the new tip.
//
// Requests are batched only with requests of the same credentials: a
// push carries one sink's credentials, and no sink's commit may travel on
// another's.

// request is one export, or one writer record (claim), waiting to be
// batched.
type request struct {
	s     *Sink
	ctx   context.Context
	snap  *rows.Snapshot
	parts []*rows.Part
	claim *claim
	done  chan result
}

type result struct {
	ack sinks.Ack
	err error
}

// key is what requests of one batch share: the branch, how it is pushed,
// and the credentials.
func (r *request) key() string {
	c := r.s.cfg
	return c.Branch + "\x00" + fmt.Sprint(c.ForcePush) + "\x00" + r.s.credentialsKey()
}

// credentialsKey tells the sink's credentials apart, hashed.
func (s *Sink) credentialsKey() string {
	c := s.cfg
	sum := sha256.Sum256([]byte(c.Username + "\x00" + c.Token + "\x00" + string(c.SSHKey) + "\x00" + string(c.KnownHosts) + "\x00" +
		fmt.Sprint(c.InsecureHostKey) + "\x00" + string(c.CABundle) + "\x00" + fmt.Sprint(c.InsecureSkipTLS)))
	return hex.EncodeToString(sum[:])
}

// export queues r and returns its result: served by whichever export
// leads, perhaps this one.
func (m *mirror) export(ctx context.Context, r *request) (sinks.Ack, error) {
	m.mu.Lock()
	m.queue = append(m.queue, r)
	m.mu.Unlock()
	for {
		select {
		case res := <-r.done:
			return res.ack, res.err
		case m.turn <- struct{}{}:
			m.lead()
			<-m.turn
		case <-ctx.Done():
			if m.withdraw(r) {
				return sinks.Ack{}, fmt.Errorf("git: wait for the other exports to this repository: %w", ctx.Err())
			}
			res := <-r.done // a leader took it: its result comes
			return res.ack, res.err
		}
	}
}

// withdraw removes r from the queue, if no leader took it yet.
func (m *mirror) withdraw(r *request) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, q := range m.queue {
		if q == r {
			m.queue = append(m.queue[:i], m.queue[i+1:]...)
			return true
		}
	}
	return false
}

// lead serves every request queued now, a batch per key, under the turn.
func (m *mirror) lead() {
	m.mu.Lock()
	queued := m.queue
	m.queue = nil
	m.mu.Unlock()
	var order []string
	groups := map[string][]*request{}
	for _, r := range queued {
		if err := r.ctx.Err(); err != nil {
			r.done <- result{err: fmt.Errorf("git: wait for the other exports to this repository: %w", err)}
			continue
		}
		k := r.key()
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	for _, k := range order {
		m.batch(groups[k])
	}
}

// batch exports rs (one key) in one push, rebuilding them all on the new
// tip while another writer beats the push: after pushBackoff, doubling up
// to pushBackoffMax, each plus up to as much again at random; for
// pushRetryFor at most (a branch that keeps refusing, such as a lock left
// by a crashed git, then fails the exports with git's own message, and
// their bindings retry them later).
func (m *mirror) batch(rs []*request) {
	ctx, cancel := batchContext(rs)
	defer cancel()
	clk := rs[0].s.cfg.Clock // a batch shares one key, so one sink's settings
	giveUp := clk.Now().Add(pushRetryFor)
	pause := wait.Backoff{Duration: pushBackoff, Factor: 2, Jitter: 1, Cap: pushBackoffMax, Steps: math.MaxInt32}.DelayFunc()
	for conflicts := 0; ; conflicts++ {
		results, err := m.attempt(ctx, rs)
		if err == nil {
			for i, r := range rs {
				results[i].ack.Conflicts = conflicts
				r.done <- results[i]
			}
			return
		}
		if !isRejected(err) || isStaleLock(err) || clk.Now().After(giveUp) {
			for _, r := range rs {
				r.done <- result{ack: sinks.Ack{Conflicts: conflicts}, err: err}
			}
			return
		}
		// Another writer pushed first (another cluster of a fleet): build
		// the commits again on the new tip, after a growing, jittered
		// pause so the writers do not collide again in step.
		for _, r := range rs {
			r.s.lastCommit, r.s.root = plumbing.ZeroHash, nil
		}
		t := time.NewTimer(pause())
		select {
		case <-ctx.Done():
			t.Stop()
			for _, r := range rs {
				r.done <- result{ack: sinks.Ack{Conflicts: conflicts}, err: err}
			}
			return
		case <-t.C:
		}
	}
}

// refList is the remote's refs, listed once per attempt with the lead's
// credentials (every request of a batch has the same), when the first
// thing that needs them asks: the owned records to prefetch and every
// writer record of the batch read this one listing. A thousand writer
// records recorded after a restart listed the remote's thousands of refs
// a thousand times, one after the other: most of that restart's minutes.
type refList struct {
	lead   *Sink
	refs   []plumbing.ReferenceName
	listed bool
}

func (l *refList) get(ctx context.Context) ([]plumbing.ReferenceName, error) {
	if !l.listed {
		refs, err := l.lead.listRefs(ctx)
		if err != nil {
			return nil, err
		}
		l.refs, l.listed = refs, true
	}
	return l.refs, nil
}

// prefetchOwned fetches, in one fetch, the owned records the batch's
// exports will read (those of sinks that have not read theirs since the
// process started): a restart of a thousand inventories on one repository
// makes one fetch of records, not a thousand. A record the remote does not
// list is absent.
func prefetchOwned(ctx context.Context, lead *Sink, rs []*request, refs *refList) error {
	want := map[plumbing.ReferenceName][]*Sink{}
	for _, r := range rs {
		if r.claim == nil && r.s.written == nil && r.s.cfg.Layout.resolve(r.snap).Mode == "perResource" {
			ref := r.s.cfg.Layout.ownedRef(r.snap.Inventory)
			want[ref] = append(want[ref], r.s)
		}
	}
	if len(want) == 0 {
		return nil
	}
	listed, err := refs.get(ctx)
	if err != nil {
		return err
	}
	held := map[plumbing.ReferenceName]bool{}
	for _, ref := range listed {
		held[ref] = true
	}
	var fetch []plumbing.ReferenceName
	for ref, ss := range want {
		state := int8(prefetchAbsent)
		if held[ref] {
			state, fetch = prefetchFetched, append(fetch, ref)
		}
		for _, s := range ss {
			s.ownedPrefetched = state
		}
	}
	if len(fetch) == 0 {
		return nil
	}
	if err := lead.fetchRefs(ctx, fetch); err != nil {
		for _, ss := range want {
			for _, s := range ss {
				s.ownedPrefetched = prefetchNone // each reads its own
			}
		}
		if isMissingRef(err) {
			return nil // one went meanwhile: each record is read on its own
		}
		return err
	}
	return nil
}

// batchContext ends when every request's context has ended: a request
// canceled while others wait does not cut their push short.
func batchContext(rs []*request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(rs[0].ctx))
	var live atomic.Int32
	live.Store(int32(len(rs)))
	stops := make([]func() bool, 0, len(rs))
	for _, r := range rs {
		stops = append(stops, context.AfterFunc(r.ctx, func() {
			if live.Add(-1) == 0 {
				cancel()
			}
		}))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// attempt fetches the branch once, builds every request's commit on the
// one before, and pushes them. It returns each request's result, or the
// error of the fetch or push, which is every request's.
func (m *mirror) attempt(ctx context.Context, rs []*request) ([]result, error) {
	st := newStage(m)
	for _, r := range rs {
		r.s.stage = st
	}
	defer func() {
		// What a failed export wrote goes with the stage, unless the stage
		// moved it to the mirror early.
		if st.early {
			m.dirty = true
		}
		st.drop() // what the push sent, when it failed
		for _, r := range rs {
			r.s.stage, r.s.ownedPrefetched = nil, prefetchNone
		}
	}()
	lead := rs[0].s // every request has the same credentials
	base, err := lead.fetch(ctx)
	if err != nil {
		return nil, err
	}
	refs := &refList{lead: lead}
	if err := prefetchOwned(ctx, lead, rs, refs); err != nil {
		return nil, err
	}
	results := make([]result, len(rs))
	var landed []*built
	var objects []plumbing.Hash
	var updates, records []refUpdate
	tip := base
	for i, r := range rs {
		if r.claim != nil {
			// A writer record is recorded from a listing made afresh (by
			// this attempt), never from the shared one a reader may see
			// up to listingTTL late.
			listed, err := refs.get(ctx)
			if err != nil {
				return nil, err
			}
			objs, ups, err := r.s.claimUpdates(r.claim, listed)
			if err != nil {
				results[i].err = err
				continue
			}
			objects, records = append(objects, objs...), append(records, ups...)
			m.dirty = true // the records' objects are not kept by the mirror's refs
			continue
		}
		b, err := r.s.build(r.ctx, r.snap, r.parts, tip)
		if err != nil {
			results[i].err = err
			m.dirty = true // what it staged goes to the mirror with the others'
			continue
		}
		results[i].ack = b.ack
		landed = append(landed, b)
		if b.commit != plumbing.ZeroHash {
			tip = b.commit
		}
	}
	if tip != base {
		updates = append(updates, refUpdate{name: plumbing.NewBranchReferenceName(lead.cfg.Branch), from: base, to: tip, force: lead.cfg.ForcePush})
	}
	for _, b := range landed {
		objects = append(objects, b.objects...)
		if b.owned.commit != plumbing.ZeroHash {
			updates = append(updates, refUpdate{name: b.owned.ref, to: b.owned.commit, force: true})
		}
	}
	updates = append(updates, records...)
	if len(updates) == 0 {
		for _, b := range landed {
			b.landed(true) // the remote already holds every one
		}
		return results, nil
	}
	if err := lead.push(ctx, objects, updates); err != nil {
		return nil, err
	}
	if len(records) > 0 {
		m.forgetListings() // the writer records changed
	}
	settled := lead.settle(updates) == nil
	for _, b := range landed {
		b.landed(settled)
	}
	// Pushed: a failed collection costs disk, never the export.
	_ = lead.maybeCollectGarbage()
	return results, nil
}
