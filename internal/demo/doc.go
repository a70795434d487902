// Package demo runs Kollect's main job end to end on this machine, with no
// cluster and no Docker: a local control plane (kube-apiserver and etcd,
// plus kube-controller-manager, kube-scheduler and kwok so Deployments get
// ReplicaSets and Running Pods on a fake node), the real manager, and a Git
// pipeline writing to a local repository. It then changes an image and
// scales a Deployment, and shows the audit trail (git log) and the drift
// (git diff). Everything it starts is stopped when Run returns, on success,
// failure or cancellation.
package demo
