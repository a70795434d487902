package clusterinventory

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kollect.dev/kollect/actors/engine"
	"kollect.dev/kollect/actors/messages"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/compile"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/pipeline/controllers"
	"kollect.dev/kollect/pipeline/controllers/inventory"
	"kollect.dev/kollect/pipeline/scope"
	"kollect.dev/kollect/pipeline/status"
)

// Finalizer releases the rollup before deletion.
const Finalizer = "kollect.dev/cluster-inventory-cleanup"

// Degraded reasons.
const (
	ReasonNoTargets = "NoTargets"
	// ReasonInvalidTargetSelector: spec.targetSelector does not parse.
	ReasonInvalidTargetSelector = "InvalidTargetSelector"
	ReasonSuspended             = "Suspended"
)

// Reconciler reconciles KollectClusterInventories.
type Reconciler struct {
	Client   client.Client
	Engine   inventory.Engine
	Status   inventory.StatusWriter
	Resolver *inventory.Resolver
	Metrics  *controllers.Metrics
	// Resync re-evaluates namespace labels and target lists periodically.
	Resync time.Duration
	Tuning controllers.Tuning
}

// SetupWithManager registers the reconciler; cluster targets, namespaces
// and sinks requeue every cluster inventory (there are few).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(r.all)
	if err := controllers.StatusController(mgr, "kollectclusterinventory", status.ClusterInventory, r.Status, r.Tuning); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("kollectclusterinventory").
		For(&kollectv1alpha1.KollectClusterInventory{}, builder.WithPredicates(controllers.SpecChanged())).
		Watches(&kollectv1alpha1.KollectClusterTarget{}, all, builder.WithPredicates(controllers.SpecChanged())).
		Watches(&kollectv1alpha1.KollectSnapshotSink{}, all, builder.WithPredicates(controllers.SpecChanged())).
		Watches(&kollectv1alpha1.KollectDatabaseSink{}, all, builder.WithPredicates(controllers.SpecChanged())).
		Watches(&kollectv1alpha1.KollectEventSink{}, all, builder.WithPredicates(controllers.SpecChanged())).
		Watches(&corev1.Namespace{}, all, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&kollectv1alpha1.KollectClusterScope{}, all).
		Watches(&kollectv1alpha1.KollectScope{}, all). // the interval floor of sinkNamespace
		WithOptions(r.Tuning.Options()).
		Complete(r.Metrics.Instrument("kollectclusterinventory", r))
}

func (r *Reconciler) all(ctx context.Context, _ client.Object) []reconcile.Request {
	var list kollectv1alpha1.KollectClusterInventoryList
	if err := r.Client.List(ctx, &list); err != nil {
		r.Metrics.MapListFailed("kollectclusterinventory", "all")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, ci := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: ci.Name}})
	}
	return out
}

func engineKey(name string) string { return string(status.ClusterInventory) + ":" + name }

func statusKey(name string) status.Key {
	return status.Key{Kind: status.ClusterInventory, NamespacedName: types.NamespacedName{Name: name}}
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var ci kollectv1alpha1.KollectClusterInventory
	cleanup := func(ctx context.Context) error {
		r.Engine.DrainInventory(ctx, engineKey(req.Name))
		err := r.Resolver.Cleanup(ctx, bindings(&ci), identity(&ci))
		var ce *inventory.CleanupError
		if errors.As(err, &ce) {
			return errors.Join(err, r.Status.Write(ctx, statusKey(req.Name), status.Verdict{Generation: ci.Generation, Reason: ce.Reason(), Message: ce.Msg}))
		}
		return err
	}
	if done, err := controllers.Begin(ctx, r.Client, req.NamespacedName, &ci, Finalizer, func() { r.release(req.Name) }, cleanup); done {
		return reconcile.Result{}, err
	}
	verdict := status.Verdict{Generation: ci.Generation}
	degrade := func(reason, msg string) (reconcile.Result, error) {
		if err := ctx.Err(); err != nil {
			// A reconcile whose context ended (the manager stopping) saw a
			// lookup fail for that reason: it changes nothing.
			return reconcile.Result{}, err
		}
		r.Engine.RemoveInventory(engineKey(req.Name))
		verdict.Reason, verdict.Message = reason, msg
		if err := r.Status.Write(ctx, statusKey(req.Name), verdict); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: r.Resync}, nil
	}
	if ci.Spec.Suspend {
		return degrade(ReasonSuspended, "spec.suspend is true: exports stopped")
	}
	if err := compile.CheckRefs(ci.Spec.SinkRefs, sinkNamespace(&ci), true); err != nil {
		return degrade(inventory.ReasonInvalidSinkRef, err.Error())
	}
	targets, expect, err := r.targets(ctx, &ci)
	var bad *badSelector
	if errors.As(err, &bad) {
		return degrade(ReasonInvalidTargetSelector, bad.Error())
	} else if err != nil {
		return reconcile.Result{}, err
	}
	verdict.Targets = len(targets)
	if len(targets) == 0 {
		return degrade(ReasonNoTargets, "no KollectClusterTarget matches spec.targetRefs or spec.targetSelector")
	}
	namespaces, err := r.namespaces(ctx, &ci)
	if err != nil {
		return degrade("InvalidNamespaceSelector", err.Error())
	}
	b := bindings(&ci)
	if v, err := checkScope(ctx, r.Client, &ci, &b); err != nil {
		return degrade(scope.ReasonLookupFailed, err.Error())
	} else if v != nil {
		return degrade(v.Reason, v.Message)
	}
	bindings, reason, err := r.Resolver.Resolve(ctx, b)
	if err != nil {
		if reason == "" {
			return reconcile.Result{}, err
		}
		return degrade(reason, err.Error())
	}
	if err := r.Engine.UpsertInventory(engine.InventorySpec{Key: engineKey(ci.Name), Kind: string(status.ClusterInventory),
		ID:       identity(&ci),
		Bindings: bindings, Cluster: true, Targets: targets, TargetNamespaces: namespaces, DedupeByUID: ci.Spec.Dedupe == "byResourceUID",
		Expect: expect}); errors.Is(err, engine.ErrStopped) {
		return reconcile.Result{}, nil // shutting down: the next leader applies it
	} else if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.Status.Write(ctx, statusKey(req.Name), verdict); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: r.Resync}, nil
}

// checkScope applies the cluster scope to a cluster inventory's sinks
// (their namespaces, then the family allow-lists) and the floor of the
// KollectScope in its sinkNamespace to its intervals.
func checkScope(ctx context.Context, c client.Reader, ci *kollectv1alpha1.KollectClusterInventory, b *inventory.Bindings) (*scope.Violation, error) {
	ceiling, err := scope.Cluster(ctx, c)
	if err != nil {
		return nil, err
	}
	for _, refs := range [][]kollectv1alpha1.InventorySinkRef{ci.Spec.SnapshotSinkRefs, ci.Spec.DatabaseSinkRefs, ci.Spec.EventSinkRefs} {
		for _, ref := range refs {
			if v := ceiling.CheckStaticRef(fmt.Sprintf("sink %q", ref.Name), b.SinkNamespace(ref), scope.ReasonSinkNamespaceDenied); v != nil {
				return v, nil
			}
		}
	}
	if v := ceiling.CheckSinks(ci.Spec.SinkRefs); v != nil {
		return v, nil
	}
	floor, err := scope.Namespaced(ctx, c, sinkNamespace(ci))
	if err != nil {
		return nil, err
	}
	b.Floor = floor.Floor()
	return nil, nil
}

func sinkNamespace(ci *kollectv1alpha1.KollectClusterInventory) string {
	if ci.Spec.SinkNamespace != "" {
		return ci.Spec.SinkNamespace
	}
	return "kollect-system"
}

func identity(ci *kollectv1alpha1.KollectClusterInventory) rows.Identity {
	return rows.Identity{Namespace: status.ClusterNamespace, Name: ci.Name, Generation: ci.Generation}
}

func bindings(ci *kollectv1alpha1.KollectClusterInventory) inventory.Bindings {
	sinkNS := sinkNamespace(ci)
	return inventory.Bindings{Owner: "cluster/" + ci.Name, OwnerKind: "KollectClusterInventory", Refs: ci.Spec.SinkRefs,
		SinkNamespace: func(ref kollectv1alpha1.InventorySinkRef) string {
			if ref.Namespace != "" {
				return ref.Namespace
			}
			return sinkNS
		}, Interval: string(ci.Spec.ExportMinInterval)}
}

func (r *Reconciler) release(name string) {
	r.Engine.RemoveInventory(engineKey(name))
	r.Resolver.Backends.Forget("cluster/" + name)
	r.Status.Forget(statusKey(name))
}

// badSelector is a spec.targetSelector that does not parse: the user's to
// fix, so the inventory is Degraded rather than retried.
type badSelector struct{ err error }

func (e *badSelector) Error() string { return "spec.targetSelector: " + e.err.Error() }

// targets selects cluster targets: by name, by label, or all of them; expect
// is those of them that should run (the engine waits for their lists).
func (r *Reconciler) targets(ctx context.Context, ci *kollectv1alpha1.KollectClusterInventory) (selected, expect []messages.TargetRef, err error) {
	var list kollectv1alpha1.KollectClusterTargetList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, nil, fmt.Errorf("list cluster targets: %w", err)
	}
	byName := map[string]bool{}
	for _, n := range ci.Spec.TargetRefs {
		byName[n] = true
	}
	var sel labels.Selector
	if len(byName) == 0 && ci.Spec.TargetSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(ci.Spec.TargetSelector)
		if err != nil {
			return nil, nil, &badSelector{err}
		}
		sel = s
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	for _, t := range list.Items {
		switch {
		case len(byName) > 0 && !byName[t.Name]:
			continue
		case sel != nil && !sel.Matches(labels.Set(t.Labels)):
			continue
		}
		ref := messages.TargetRef{Kind: engine.ClusterTargetKind, Name: t.Name}
		selected = append(selected, ref)
		if inventory.Runs(t.Spec.Suspend, &t) {
			expect = append(expect, ref)
		}
	}
	return selected, expect, nil
}

// namespaces is spec.namespaces (when set) intersected with the namespaces
// whose labels match namespaceSelector. It reads the manager's cache, the
// same one whose namespace events trigger this reconcile, so a label change
// is never judged on older data.
func (r *Reconciler) namespaces(ctx context.Context, ci *kollectv1alpha1.KollectClusterInventory) (map[string]bool, error) {
	sel, err := metav1.LabelSelectorAsSelector(ci.Spec.NamespaceSelector)
	if err != nil {
		return nil, fmt.Errorf("spec.namespaceSelector: %w", err)
	}
	explicit := map[string]bool{}
	for _, n := range ci.Spec.Namespaces {
		explicit[n] = true
	}
	var list corev1.NamespaceList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	out := map[string]bool{}
	for _, ns := range list.Items {
		if (len(explicit) > 0 && !explicit[ns.Name]) || !sel.Matches(labels.Set(ns.Labels)) {
			continue
		}
		out[ns.Name] = true
	}
	return out, nil
}
