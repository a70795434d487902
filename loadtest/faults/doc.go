// Package faults holds the fault-injection suite: it runs the real
// `kollect manager` process against a test control plane and real sinks (a
// Git bare repository, PostgreSQL, an embedded NATS JetStream server and
// kfake), then restarts it, kills it, freezes the API server and takes
// sinks away, and reads each sink's whole history (every commit, every
// delete recorded by a trigger, every message) to show that no fault ever
// rewrote or dropped a row. docs/reliability.md lists the faults and what
// was measured.
//
// make test runs it in a short form (a few thousand objects);
// make faults runs it larger (KOLLECT_FAULTS_OBJECTS).
//
// It imports testenv and the sinks' test servers; nothing imports it.
package faults
