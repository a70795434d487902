package controllers

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kollect.dev/kollect/informers"
)

// AllIn maps an object to every object of list's kind in its namespace:
// a scope, a sink or a target that changes requeues what it governs. A
// failed list is counted for controller (kollect_watch_map_list_errors_total).
func (m *Metrics) AllIn(controller string, c client.Reader, list client.ObjectList) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return m.listIn(ctx, controller, c, list, o, o.GetNamespace())
	})
}

// Inside maps a Namespace object to every object of list's kind inside
// it: a namespace whose labels change requeues only its own objects.
func (m *Metrics) Inside(controller string, c client.Reader, list client.ObjectList) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return m.listIn(ctx, controller, c, list, o, o.GetName())
	})
}

// listIn is a request for every object of list's kind in namespace ("":
// every namespace), for a change of o.
func (m *Metrics) listIn(ctx context.Context, controller string, c client.Reader, list client.ObjectList, o client.Object, namespace string) []reconcile.Request {
	l := list.DeepCopyObject().(client.ObjectList)
	if err := c.List(ctx, l, client.InNamespace(namespace)); err != nil {
		m.MapListFailed(controller, WatchName(o))
		return nil
	}
	var reqs []reconcile.Request
	_ = meta.EachListItem(l, func(item runtime.Object) error {
		if co, ok := item.(client.Object); ok {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(co)})
		}
		return nil
	})
	return reqs
}

// NamespaceWatcher announces namespaces that appear, go, or change labels
// or annotations: the informers' namespace cache, the one selections read.
type NamespaceWatcher interface {
	WatchNamespaces(id string, s informers.NamespaceSubscriber)
}

// namespaceFunc adapts a function to informers.NamespaceSubscriber.
type namespaceFunc func(name string)

func (f namespaceFunc) NamespaceChanged(name string) { f(name) }

// WatchName names the kind of a watched object for the watch label: its
// type's name (KollectScope, Namespace).
func WatchName(o client.Object) string {
	t := reflect.TypeOf(o)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
