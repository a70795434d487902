// Package conformance holds the upstream-sample suite that `make
// conformance` runs: every manifest of the upstream corpus (kept outside
// this repository, in ../shared/conformance or CONFORMANCE_DIR) is applied
// to a real control plane with the Kollect CRDs, and the outcome is compared
// with the target behaviour the corpus README states for that file.
//
// The suite carries the build tag `conformance`, so `go test ./...` (and so
// `make test`) never runs it: a user's clone has no corpus.
package conformance
