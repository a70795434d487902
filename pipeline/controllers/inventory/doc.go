// Package inventory reconciles KollectInventories: it resolves every sink
// binding in the inventory's namespace (sink object, credentials Secret,
// endpoint safety, effective interval), builds or reuses the backend, and
// hands the bindings to the engine. Secrets are read here and passed to
// backends as plain values; backends never read Secrets themselves.
package inventory
