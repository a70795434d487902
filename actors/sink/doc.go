// Package sink is the Sink actor: one per inventory binding, supervised by
// its Inventory actor. It holds the newest snapshot offered (an unsent older
// one is simply replaced: snapshot sinks need only the latest state), runs
// the export on its own goroutine so the mailbox never waits on I/O,
// retries with exponential back-off and jitter, and trips a circuit breaker
// (closed → open → half-open) after repeated failures. Under constant
// change its exports take at most half of its time (actors/pace): a due
// export waits for the budget and then carries every change made
// meanwhile. A down sink never stalls collection or other bindings.
package sink
