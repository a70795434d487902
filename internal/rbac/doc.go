// Package rbac runs the manager on RBAC narrower than the chart's
// ClusterRole, as platforms grant it: kinds readable by Roles in some
// namespaces only.
package rbac
