// Package clusterinventory reconciles KollectClusterInventories: it picks
// the cluster targets (by name, by label, or all), the namespaces they roll
// up (spec.namespaces intersected with namespaceSelector), resolves sinks in
// spec.sinkNamespace or each reference's namespace, and hands the rollup to
// the engine. It exports as inventory "cluster/<name>".
package clusterinventory
