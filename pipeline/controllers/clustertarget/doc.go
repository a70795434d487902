// Package clustertarget reconciles KollectClusterTargets: the platform
// variant of a target, whose profile lives in a named namespace and whose
// rows carry the workload namespace as their target namespace. It compiles
// through the same path as KollectTarget.
package clustertarget
