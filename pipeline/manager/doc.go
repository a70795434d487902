// Package manager builds and runs the Kollect operator process: a
// controller-runtime manager with leader election, the metrics endpoint and
// the health probes, configured from the flags the upstream operator
// accepts (see Options).
//
// It owns process wiring only. Reconcilers live in pipeline/controllers and
// the collection engine in actors/ and informers/; this package connects
// them and must not implement collection or export itself.
package manager
