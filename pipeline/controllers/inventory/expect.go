package inventory

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kollect.dev/kollect/actors/engine"
	"kollect.dev/kollect/actors/messages"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// ExpectedTargets lists the targets whose rows an inventory of namespace
// reads and that should be running: the namespace's KollectTargets and every
// KollectClusterTarget, less the suspended ones and those being deleted. The
// engine holds the inventory's exports until each of them has listed its
// objects, so a restarted manager never exports before it has seen
// everything.
func ExpectedTargets(ctx context.Context, c client.Reader, namespace string) ([]messages.TargetRef, error) {
	var out []messages.TargetRef
	var list kollectv1alpha1.KollectTargetList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list targets: %w", err)
	}
	for _, t := range list.Items {
		if !t.Spec.Suspend && t.DeletionTimestamp.IsZero() {
			out = append(out, messages.TargetRef{Kind: "KollectTarget", Namespace: t.Namespace, Name: t.Name})
		}
	}
	running, err := RunningClusterTargets(ctx, c)
	if err != nil {
		return nil, err
	}
	for name := range running {
		out = append(out, messages.TargetRef{Kind: engine.ClusterTargetKind, Name: name})
	}
	return out, nil
}

// RunningClusterTargets names the cluster targets that should be running:
// neither suspended nor being deleted.
func RunningClusterTargets(ctx context.Context, c client.Reader) (map[string]bool, error) {
	var list kollectv1alpha1.KollectClusterTargetList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list cluster targets: %w", err)
	}
	out := map[string]bool{}
	for _, t := range list.Items {
		if !t.Spec.Suspend && t.DeletionTimestamp.IsZero() {
			out[t.Name] = true
		}
	}
	return out, nil
}

// allInventories requeues every KollectInventory: a cluster target feeds
// inventories in every namespace.
func (r *Reconciler) allInventories(ctx context.Context, _ client.Object) []reconcile.Request {
	var list kollectv1alpha1.KollectInventoryList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, inv := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&inv)})
	}
	return reqs
}
