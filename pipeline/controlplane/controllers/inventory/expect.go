package inventory

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/actors/engine"
	"kollect.dev/kollect/actors/messages"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// ExpectedTargets lists the targets whose rows an inventory of namespace
// reads and that should be running: the namespace's KollectTargets and, with
// cluster, every KollectClusterTarget, less the suspended ones and those being deleted. The
// engine holds the inventory's exports until each of them has listed its
// objects, so a restarted manager never exports before it has seen
// everything.
func ExpectedTargets(ctx context.Context, c client.Reader, namespace string, cluster bool) ([]messages.TargetRef, error) {
	var out []messages.TargetRef
	var list kollectv1alpha1.KollectTargetList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list targets: %w", err)
	}
	for _, t := range list.Items {
		if Runs(t.Spec.Suspend, &t) {
			out = append(out, messages.TargetRef{Kind: "KollectTarget", Namespace: t.Namespace, Name: t.Name})
		}
	}
	if !cluster {
		return out, nil
	}
	var cts kollectv1alpha1.KollectClusterTargetList
	if err := c.List(ctx, &cts); err != nil {
		return nil, fmt.Errorf("list cluster targets: %w", err)
	}
	for _, t := range cts.Items {
		if Runs(t.Spec.Suspend, &t) {
			out = append(out, messages.TargetRef{Kind: engine.ClusterTargetKind, Name: t.Name})
		}
	}
	return out, nil
}

// Runs reports whether a target should be running: neither suspended nor
// being deleted.
func Runs(suspended bool, t client.Object) bool {
	return !suspended && t.GetDeletionTimestamp().IsZero()
}
