// Package informers owns the collection engine's view of the cluster: one
// shared dynamic informer per GVR, resolved through discovery (never a
// guessed plural), reference-counted by the targets that need it and
// scoped to the namespaces they name: one informer for one namespace or
// for every namespace, or one per namespace where the operator may not
// list them all at once (access.go), so a namespace it may not read holds
// only the targets that read it. A transform
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
