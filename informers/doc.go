// Package informers owns the collection engine's view of the cluster: one
// shared dynamic informer per GVR, resolved through discovery (never a
// guessed plural), reference-counted by the targets that need it and
// scoped to a single namespace when all of them agree on one. A transform
// strips managedFields and the last-applied annotation before anything is
// cached.
//
// Events are routed to Subscribers, whose Notify must never block: the
// informer goroutine only hands the event over (targets coalesce by object
// key). Namespaces are watched once for everyone, so that selection can
// read namespace labels and re-evaluate when they change.
//
// It imports no actor and no API type of Kollect's own.
package informers
