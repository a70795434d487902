// Package familysink reconciles the three sink kinds (KollectSnapshotSink,
// KollectDatabaseSink, KollectEventSink) with one reconciler: it renders
// status.preview when asked, probes the backend through the backends
// registry (credentials resolved, endpoint allowed, remote reachable) when
// the sink asks for it, and writes ConnectionVerified, Degraded and
// TLSInsecure. A failed probe is retried with back-off. Probing never
// blocks exports: a down sink is handled by its bindings' circuit breakers.
package familysink
