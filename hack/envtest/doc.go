// Package envtest holds the wrapper modules that build the control-plane
// binaries the tests and the demo run (k8s: kube-apiserver,
// kube-controller-manager, kube-scheduler; etcd; kubectl), and a test that
// keeps the k8s wrapper on the module versions Kollect uses: a brand-new
// machine then compiles the Kubernetes libraries once, for kube-apiserver,
// and Kollect's build reuses them from the build cache.
package envtest
