// Package actors holds the pieces every Kollect actor shares: mailbox-depth
// and processing metrics, wired into protoactor-go as mailbox and receiver
// middleware.
//
// The actor tree: one Target actor per KollectTarget, one Inventory actor
// per KollectInventory, and under each inventory one supervised Sink actor
// per binding. Actors never import controller-runtime or API types.
package actors
