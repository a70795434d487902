// Package cli holds the command-line tools that work with a kubeconfig
// alone, without the operator or the CRDs installed: `kollect collect`
// collects once with the operator's own selection and extraction code
// (pipeline/collect) and prints the result.
package cli
