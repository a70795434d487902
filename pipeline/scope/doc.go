// Package scope reads the tenancy ceilings (KollectScope, KollectClusterScope)
// and checks objects against them. The same checks serve the controllers,
// which degrade an object that breaks its scope, and the admission
// webhooks, which refuse it.
//
// Scopes only narrow. Where upstream used the scope with the smallest name
// and ignored the others, a Ceiling here is every scope that governs an
// object at once: a namespace's KollectScopes and the cluster's
// KollectClusterScopes, each of which must allow what is asked. So a
// tenant who may create a KollectScope in its own namespace can add
// limits, never lift the platform's. What a scope grants beyond the
// default (other namespaces to collect, other namespaces' Secrets, the
// operator's cloud identity) is granted only when every namespaced scope
// grants it; see docs/security.md.
package scope
