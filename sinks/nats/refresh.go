package nats

import (
	"context"
	"time"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/events"
)

// A stream with a maximum age drops its oldest messages, other scopes'
// included. A checkpoint is usable only while the message after it is
// still in the stream, so a quiet inventory's checkpoint (written at its
// last export, however long ago) would go stale although none of its own
// messages were dropped, and a restart would then republish its rows and
// possibly miss a delete. While the operator runs, a sink therefore
// renews the checkpoint of every scope whose state it knows exactly once
// it is older than a quarter of the stream's maximum age (checked eight
// times as often), at the stream's end: with no export of the scope in
// flight, no message after the last one it published changes the scope.
// A checkpoint is then at most about 28% of the maximum age old, and
// recovery stays exact unless the operator was down for more than two
// thirds of it; past that it keeps what the stale checkpoint names
// (unknownSums).

// exactState is what a sink knows a scope's stream holds: the snapshot of
// its last export, acknowledged whole, after a full reconcile in this
// process and with nothing set aside since.
type exactState struct {
	scope        events.Scope
	snap         *rows.Snapshot
	checkpointed time.Time // the last checkpoint written of it
}

// track records the scope's state after an acknowledged export of snap.
// Callers hold mu, after setAside was updated for this export.
func (s *Sink) track(key string, scope events.Scope, snap *rows.Snapshot, reconciled bool) {
	if s.exact == nil {
		s.exact = map[string]*exactState{}
	}
	e := s.exact[key]
	switch {
	case s.setAside[key]:
		delete(s.exact, key) // the stream holds a version the snapshot does not say
		return
	case e == nil && !reconciled:
		return // nothing this process read says what the stream holds
	case e == nil:
		e = &exactState{}
		s.exact[key] = e
	}
	e.scope, e.snap = scope, snap
}

// untrack forgets every scope's state after a failed export: it may have
// published part of its changes. The next attempt reconciles in full.
func (s *Sink) untrack() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.exact)
}

// startRefresh starts renewing checkpoints once per sink, when the stream
// drops messages by age (or cfg.RefreshEvery says how often).
func (s *Sink) startRefresh(maxAge time.Duration) {
	every := s.cfg.RefreshEvery
	if every <= 0 {
		every = maxAge / 4
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if every <= 0 || s.stopRefresh != nil {
		return
	}
	stop, done := make(chan struct{}), make(chan struct{})
	s.stopRefresh, s.refreshDone = stop, done
	go func() {
		defer close(done)
		t := time.NewTicker(every / 8)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s.refresh(every)
			}
		}
	}()
}

// stopRefreshing stops the renewals and waits for one under way: a sink
// closed (replaced by another of the same scope) writes nothing after.
func (s *Sink) stopRefreshing() {
	s.mu.Lock()
	stop, done := s.stopRefresh, s.refreshDone
	s.stopRefresh, s.refreshDone = nil, nil
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// refresh writes a checkpoint, at the stream's end, of every scope whose
// exact state was last checkpointed longer than every ago. It skips its
// turn while an export runs (that export checkpoints when due).
func (s *Sink) refresh(every time.Duration) {
	if !s.exporting.TryLock() {
		return
	}
	defer s.exporting.Unlock()
	type due struct {
		key string
		e   exactState
	}
	var todo []due
	s.mu.Lock()
	js, st := s.js, s.stream
	for key, e := range s.exact {
		if s.cfg.Clock.Since(e.checkpointed) >= every {
			todo = append(todo, due{key, *e})
		}
	}
	s.mu.Unlock()
	if js == nil || st == nil || len(todo) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := st.Info(ctx)
	if err != nil {
		return // the next turn tries again
	}
	for _, d := range todo {
		if err := s.writeCheckpoint(ctx, js, d.key, d.e.scope, d.e.snap, info.State.LastSeq); err != nil {
			return
		}
	}
}
