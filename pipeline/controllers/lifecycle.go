package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// Begin is the common start of a reconcile: it loads obj, and when the
// object is gone or being deleted it calls release and finishes the
// deletion (removing finalizer); otherwise it makes sure finalizer is set.
// done reports that the reconcile has nothing more to do.
func Begin(ctx context.Context, c client.Client, key types.NamespacedName, obj client.Object, finalizer string, release func()) (done bool, err error) {
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			release()
			return true, nil
		}
		return true, err
	}
	if !obj.GetDeletionTimestamp().IsZero() {
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

// ReadSecret returns the data and resourceVersion of the Secret ref names;
// its namespace defaults to defaultNamespace. A nil ref gives no data.
func ReadSecret(ctx context.Context, c client.Client, ref *kollectv1alpha1.SecretReference, defaultNamespace string) (map[string][]byte, string, error) {
	if ref == nil {
		return nil, "", nil
	}
	ns := ref.Namespace
	if ns == "" {
		ns = defaultNamespace
	}
	var sec corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", fmt.Errorf("credentials Secret %s/%s not found", ns, ref.Name)
		}
		return nil, "", fmt.Errorf("reading credentials Secret %s/%s: %w", ns, ref.Name, err)
	}
	return sec.Data, sec.ResourceVersion, nil
}
