// Package snapshotsink reconciles KollectSnapshotSinks: it probes the
// backend (credentials resolved, endpoint allowed, remote reachable) when
// the sink asks for it and writes ConnectionVerified, Degraded and
// TLSInsecure. A failed probe is retried with back-off. Probing never
// blocks exports: a down sink is handled by its bindings' circuit breakers.
package snapshotsink
