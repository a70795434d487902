package controllers

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Begin is the common start of a reconcile: it loads obj, and when the
// object is gone or being deleted it calls release and finishes the
// deletion (removing finalizer); otherwise it makes sure finalizer is set.
// cleanup, when given, runs first on deletion; while it fails the finalizer
// stays and its error is returned, so the deletion is retried. done reports
// that the reconcile has nothing more to do.
func Begin(ctx context.Context, c client.Client, key types.NamespacedName, obj client.Object, finalizer string, release func(),
	cleanup ...func(context.Context) error) (done bool, err error) {
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			release()
			return true, nil
		}
		return true, err
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		if controllerutil.ContainsFinalizer(obj, finalizer) {
			for _, f := range cleanup {
				if err := f(ctx); err != nil {
					return true, err
				}
			}
		}
		release()
		if controllerutil.RemoveFinalizer(obj, finalizer) {
			return true, c.Update(ctx, obj)
		}
		return true, nil
	}
	if controllerutil.AddFinalizer(obj, finalizer) {
		if err := c.Update(ctx, obj); err != nil {
			return true, err
		}
	}
	return false, nil
}
