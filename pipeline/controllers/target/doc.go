// Package target reconciles KollectTargets: it resolves the profile in the
// target's namespace, compiles selection and extraction once per target and
// profile generation, registers the target with the engine, and tells the
// status writer whether the target is collecting or Degraded and why.
package target
