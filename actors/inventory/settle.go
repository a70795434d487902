package inventory

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"kollect.dev/kollect/actors"
	"kollect.dev/kollect/actors/messages"
)

// settleGrace is how long after it starts an inventory's reports say it
// is settling (Report.Settling) while the targets it read from the start
// have not all listed: a manager that has just started has every target
// list anew, which takes seconds (tens of them at a thousand teams) and
// changes nothing the sinks hold. Status keeps what it said meanwhile; a target still not listed
// after the grace is one that cannot list, and status says so.
const settleGrace = 30 * time.Second

// settleEnded tells the actor its grace ended: it reports again, so that
// status says what it still waits for.
type settleEnded struct{}

// startSettling marks the actor's start (its first configuration, which
// follows it at once), once, with the targets it reads then, and arms the
// grace's end.
func (a *actorState) startSettling(ctx actor.Context) {
	if !a.startedAt.IsZero() {
		return
	}
	a.startedAt = a.clock.Now()
	a.initial = map[messages.TargetRef]bool{}
	for _, t := range a.cfg.Sources {
		a.initial[t.Ref] = true
	}
	for _, ref := range a.cfg.Missing {
		a.initial[ref] = true
	}
	a.cancelSettle = actors.SendAfter(a.clock, ctx.ActorSystem().Root, a.grace(), ctx.Self(), settleEnded{})
}

func (a *actorState) grace() time.Duration {
	if a.cfg != nil && a.cfg.SettleGrace > 0 {
		return a.cfg.SettleGrace
	}
	return settleGrace
}

// settling reports whether the actor started less than its grace ago and
// waits only for targets it read from the start that may yet run: a target
// that joined since (its rows never exported) or one the operator refused
// to run is news.
func (a *actorState) settling() bool {
	if !a.startedAt.IsZero() && a.clock.Since(a.startedAt) >= a.grace() {
		return false
	}
	if len(a.cfg.Refused) > 0 {
		return false
	}
	for _, ref := range a.heldTargets() {
		if !a.initial[ref] {
			return false
		}
	}
	return true
}

func (a *actorState) stopSettling() {
	if a.cancelSettle != nil {
		a.cancelSettle()
		a.cancelSettle = nil
	}
}
