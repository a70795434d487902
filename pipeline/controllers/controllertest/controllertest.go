// Package controllertest holds what the reconcilers' fake-client tests
// share: the scheme, a fixed namespace cache and a resolver that never
// reaches DNS.
package controllertest

import (
	"context"
	"net/netip"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/informers"
)

// Scheme knows the built-in kinds and Kollect's.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kollectv1alpha1.AddToScheme(s)
	return s
}

// Namespaces is a fixed namespace cache, without labels.
type Namespaces []string

// NamespaceNames lists the namespaces.
func (n Namespaces) NamespaceNames() []string { return n }

// Namespace returns a namespace object with only its name.
func (n Namespaces) Namespace(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetName(name)
	return u
}

// WatchNamespaces announces nothing: the namespaces never change.
func (n Namespaces) WatchNamespaces(string, informers.NamespaceSubscriber) {}

// NoDNS answers every name with a documentation address: a test resolves
// and dials nothing.
func NoDNS(context.Context, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("192.0.2.1")}, nil
}
