// Package target is the Target actor: one per KollectTarget. It owns the
// target's rows (object → row), evaluates selection and extraction for each
// informer event, and sends row changes to the Inventory actors subscribed
// to it. Events reach it through an Inbox that coalesces by object key, so
// an informer goroutine never blocks and the mailbox never holds more than
// one wake-up.
package target
