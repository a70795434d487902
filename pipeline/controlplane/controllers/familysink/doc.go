// Package familysink reconciles the database and event sink kinds
// (KollectDatabaseSink, KollectEventSink) until their backends exist: when
// a probe is requested it reports, in ConnectionVerified and Degraded, that
// the sink type is not implemented yet, so `kubectl get kdb,kevt` says so
// instead of staying silent.
package familysink
