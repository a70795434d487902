// Package inventory is the Inventory actor: one per KollectInventory. It
// aggregates the rows of the targets it subscribes to, coalesces bursts of
// changes over a short batch window, builds one immutable snapshot per
// round, and offers it to one supervised Sink actor per binding. Each sink
// actor debounces, retries and breaks its own circuit, so one slow or down
// sink never delays another.
package inventory
