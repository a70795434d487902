package sink

import (
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Circuit is a breaker state.
type Circuit string

// Breaker states.
const (
	Closed   Circuit = "Closed"
	Open     Circuit = "Open"
	HalfOpen Circuit = "HalfOpen"
)

func (c Circuit) metric() float64 {
	switch c {
	case HalfOpen:
		return 1
	case Open:
		return 2
	}
	return 0
}

// Breaker is a binding's circuit breaker and retry back-off, without
// timers: the actor asks it what to do and schedules the retry itself.
// OpenAfter consecutive failures open the circuit; the retry that follows a
// back-off half-opens it; one success closes it, one failure while half
// open opens it again.
type Breaker struct {
	OpenAfter int
	// Backoff is the delay after the first failure, doubled for each
	// further one up to Backoff.Cap.
	Backoff wait.Backoff
	// Jitter draws in [0, n); nil uses math/rand. Tests fix it.
	Jitter func(n int64) int64

	state    Circuit
	failures int
}

// State is the circuit.
func (b *Breaker) State() Circuit {
	if b.state == "" {
		return Closed
	}
	return b.state
}

// Failures counts consecutive failures.
func (b *Breaker) Failures() int { return b.failures }

// Success closes the circuit.
func (b *Breaker) Success() {
	b.failures, b.state = 0, Closed
}

// Failure records a failed export and returns how long to wait before the
// next attempt: exponential in the consecutive failures, capped, with up to
// half of it taken off at random so that many bindings do not retry in step.
func (b *Breaker) Failure() time.Duration {
	b.failures++
	if b.failures >= b.OpenAfter || b.state == HalfOpen {
		b.state = Open
	}
	steps := b.Backoff
	steps.Factor, steps.Jitter, steps.Steps = 2, 0, b.failures
	var d time.Duration
	for range b.failures {
		d = steps.Step() // past the cap, Step keeps returning the cap
	}
	if b.Backoff.Cap > 0 {
		d = min(d, b.Backoff.Cap)
	}
	jitter := b.Jitter
	if jitter == nil {
		jitter = rand.Int64N
	}
	return d/2 + time.Duration(jitter(int64(d/2)+1))
}

// Retry is the end of a back-off: an open circuit lets one attempt
// through.
func (b *Breaker) Retry() {
	if b.state == Open {
		b.state = HalfOpen
	}
}
