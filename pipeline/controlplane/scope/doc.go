// Package scope reads the tenancy ceilings (KollectScope, KollectClusterScope)
// and checks objects against them. The same checks serve the controllers,
// which degrade an object that breaks its scope, and the admission
// webhooks, which refuse it (SEMANTICS §6).
package scope
