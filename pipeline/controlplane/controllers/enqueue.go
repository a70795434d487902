package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// AllIn maps an object to every object of list's kind in its namespace:
// a scope, a sink or a target that changes requeues what it governs.
func AllIn(c client.Reader, list client.ObjectList) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, l, client.InNamespace(o.GetNamespace())); err != nil {
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
	})
}
