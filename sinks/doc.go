// Package sinks defines what a backend must do, one small interface per
// family, and the error classes that let the engine (not the backend)
// decide on retries. Backends live in sub-packages (sinks/git, ...); they
// receive plain configuration and credentials and never hold a Kubernetes
// client.
package sinks
