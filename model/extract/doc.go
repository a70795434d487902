// Package extract turns a profile's attribute paths into compiled
// evaluators, once per profile generation, and evaluates them per object:
// kubectl-style JSONPath (plain field paths take a
// reflection-free fast path), CEL with the `cel:` prefix, and Helm release
// fields with the `helm:release.` prefix. Redaction of values under sensitive keys lives here too.
//
// An Extractor is not safe for concurrent use: each Target actor owns its
// own. This package is a leaf: it imports nothing of Kollect's own.
package extract
