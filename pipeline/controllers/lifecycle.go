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
		before := obj.DeepCopyObject().(client.Object)
		if controllerutil.RemoveFinalizer(obj, finalizer) {
			return true, patchFinalizers(ctx, c, obj, before)
		}
		return true, nil
	}
	before := obj.DeepCopyObject().(client.Object)
	if controllerutil.AddFinalizer(obj, finalizer) {
		if err := patchFinalizers(ctx, c, obj, before); err != nil {
			return true, err
		}
	}
	return false, nil
}

// patchFinalizers sends only the finalizers changed from before. An update
// would send the whole object back in this version's words, and so edit
// what the user wrote (a sink reference written as a plain string comes
// back as an object): the operator never edits a spec. The resourceVersion
// guards the list against a concurrent change.
func patchFinalizers(ctx context.Context, c client.Client, obj, before client.Object) error {
	return c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}
