// Package testenv starts a real Kubernetes control plane (kube-apiserver and
// etcd, through controller-runtime's envtest) with the Kollect CRDs
// installed, for tests anywhere in the module.
//
// The binaries come from bin/envtest (built by `make envtest-assets`) or
// from KUBEBUILDER_ASSETS. When they are missing Start fails with a message
// that says how to build them; a test never skips for want of a server.
package testenv
