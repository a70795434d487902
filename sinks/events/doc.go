// Package events is the message model shared by the event sinks (Kafka,
// NATS JetStream): one message per row change, keyed by a stable row key,
// with a change id that is the same whenever the same change is published
// again, so brokers and consumers can drop duplicates.
//
// After a restart a backend does not know what it published; it folds the
// stream it writes to back into a State and publishes only what differs
// from it, instead of replaying the whole inventory.
package events
