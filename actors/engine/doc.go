// Package engine is the facade the controllers drive: it owns the actor
// system and the informer manager, spawns and reconfigures Target and
// Inventory actors, and links every inventory to the targets of its
// namespace. Its methods may block on informer syncs, so
// they run on reconciler goroutines, never inside an actor.
package engine
