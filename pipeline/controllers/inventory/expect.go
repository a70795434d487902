package inventory

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/actors/engine"
	"kollect.dev/kollect/actors/messages"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// ExpectedTargets lists the targets whose rows an inventory of namespace
// reads and that should be running: the namespace's KollectTargets and, with
// cluster, every KollectClusterTarget that may collect in namespace, less
// the suspended ones and those being deleted. The engine holds the
// inventory's exports until each of them has listed its objects, so a
// restarted manager never exports before it has seen everything; a
// cluster target whose selection excludes the namespace feeds it nothing,
// so it holds nothing there (one broken cluster target does not hold
// every tenant's inventory).
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
	var ns *corev1.Namespace
	if len(cts.Items) > 0 {
		ns = &corev1.Namespace{}
		if err := c.Get(ctx, types.NamespacedName{Name: namespace}, ns); err != nil {
			ns = nil // unknown: every cluster target may collect there
		}
	}
	for _, t := range cts.Items {
		if Runs(t.Spec.Suspend, &t) && mayCollectIn(&t.Spec, ns) {
			out = append(out, messages.TargetRef{Kind: engine.ClusterTargetKind, Name: t.Name})
		}
	}
	return out, nil
}

// mayCollectIn reports whether a cluster target may collect objects of ns
// (nil: unknown, so it may). Only what proves it cannot says false: a list
// that leaves ns out, or a selector that does not match its labels; a
// selector that does not parse says true (the target degrades on its own).
func mayCollectIn(spec *kollectv1alpha1.KollectClusterTargetSpec, ns *corev1.Namespace) bool {
	if ns == nil {
		return true
	}
	if len(spec.IncludedNamespaces) > 0 && !slices.Contains(spec.IncludedNamespaces, ns.Name) {
		return false
	}
	if slices.Contains(spec.ExcludedNamespaces, ns.Name) {
		return false
	}
	set := labels.Set(ns.Labels)
	if sel := spec.NamespaceSelector; sel != nil {
		if s, err := metav1.LabelSelectorAsSelector(sel); err == nil && !s.Matches(set) {
			return false
		}
	}
	if sel := spec.NamespaceExcludeSelector; sel != nil {
		if s, err := metav1.LabelSelectorAsSelector(sel); err == nil && !s.Empty() && s.Matches(set) {
			return false
		}
	}
	return true
}

// Runs reports whether a target should be running: neither suspended nor
// being deleted.
func Runs(suspended bool, t client.Object) bool {
	return !suspended && t.GetDeletionTimestamp().IsZero()
}
