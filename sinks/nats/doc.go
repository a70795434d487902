// Package nats is the NATS JetStream event sink: one message per row change
// on the configured subject, with Nats-Msg-Id set to the change id so the
// server drops a re-published change inside its duplicate window. A change
// counts as exported only once the server has acknowledged it.
//
// The package receives plain configuration and credentials; adapter.go
// alone reads the API types.
package nats
