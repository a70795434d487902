// Package backends turns sink objects into running backends: it reads the
// credentials a sink names, builds the backend for its family and type
// from a registry (with the endpoint guard applied), keeps built backends
// while their configuration is unchanged, and probes them for the sink
// controllers. It is the one place where API types meet sink packages.
package backends
