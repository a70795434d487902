// Package sinktest is the conformance suite every sink backend runs against
// its real server: first export, updates, deletes, an empty snapshot, the
// same snapshot twice, a restart of the operator, two clusters sharing the
// backend and an outage in the middle. A backend's test supplies a Harness
// that builds backends and reads back what the server holds.
package sinktest
