package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/utils/clock"
)

// Clock is the one source of time of the engine and its actors: what they
// read as now, how long something took, and the timers they send
// themselves (debounce, pacing, retries, re-exports, sampling). engine.New
// takes it and hands it to every actor it spawns; tests pass a
// k8s.io/utils/clock/testing FakeClock and step it.
type Clock = clock.WithDelayedExecution

// OrReal returns c, or the real clock when c is nil.
func OrReal(c Clock) Clock {
	if c == nil {
		return clock.RealClock{}
	}
	return c
}

// SendAfter sends msg to pid once d has passed on c; the returned func
// cancels it if it has not been sent yet.
func SendAfter(c Clock, root *actor.RootContext, d time.Duration, pid *actor.PID, msg any) func() {
	t := c.AfterFunc(d, func() { root.Send(pid, msg) })
	return func() { t.Stop() }
}
