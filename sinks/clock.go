package sinks

import "k8s.io/utils/clock"

// OrRealClock is c, or the real clock when c is nil: what a backend's
// Config.Clock left unset means.
func OrRealClock(c clock.PassiveClock) clock.PassiveClock {
	if c == nil {
		return clock.RealClock{}
	}
	return c
}
