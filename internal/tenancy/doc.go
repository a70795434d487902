// Package tenancy attacks the operator as a tenant would: its tests run
// the real manager as a process against a real API server, act through an
// impersonated identity that holds only a namespaced Role (kollect.dev/*,
// and ConfigMaps and Secrets of its own namespace), and check that every
// way out of the namespace is refused, with a condition that says why,
// before any request leaves the operator. docs/security.md lists each
// boundary with the test that proves it.
//
// It holds tests only; nothing imports it.
package tenancy
