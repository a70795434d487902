// Package readapi serves the inventory HTTP read API (--inventory-http-enabled):
// the rows each inventory last built from a complete view of its targets,
// its export status, a server-sent-events watch of changes, and the status
// of inventories and targets, with upstream's routes and JSON. Callers
// authenticate with a bearer token (TokenReview) and each route asks the
// API server whether they may get or list the kind it reads
// (SubjectAccessReview), so the API grants nothing RBAC does not.
//
// Rows are keyed by cluster, namespace and name: this operator serves its
// own cluster (its --cluster-name, or ""), and a fleet read plane adds
// other clusters' stores under their names without changing a route.
package readapi
