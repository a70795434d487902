package inventory

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"kollect.dev/kollect/actors/engine"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/compile"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/pipeline/controllers"
	"kollect.dev/kollect/pipeline/scope"
	"kollect.dev/kollect/pipeline/status"
)

// Finalizer lets the inventory release its bindings before deletion.
const Finalizer = "kollect.dev/inventory-cleanup"

// Degraded reasons.
const (
	ReasonSuspended      = "Suspended"
	ReasonSinkNotFound   = "SinkNotFound"
	ReasonInvalidSinkRef = "InvalidSinkRef"
	// ReasonReservedNamespace: the inventory's namespace is cluster
	// inventories' identity in the sinks.
	ReasonReservedNamespace = "ReservedNamespace"
	defaultInterval         = 30 * time.Second
)

// Engine is what the reconciler drives.
type Engine interface {
	UpsertInventory(spec engine.InventorySpec) error
	RemoveInventory(key string)
	// DrainInventory also waits for the exports the removal cancelled.
	DrainInventory(ctx context.Context, key string)
}

// StatusWriter writes verdicts merged with the engine's reports, and
// turns those reports into reconcile requests.
type StatusWriter interface {
	Write(ctx context.Context, key status.Key, v status.Verdict) error
	Forget(key status.Key)
	Source(kind status.Kind) source.Source
	Refresh(ctx context.Context, key status.Key) error
}

// Reconciler reconciles KollectInventories.
type Reconciler struct {
	Client   client.Client
	Engine   Engine
	Status   StatusWriter
	Resolver *Resolver
	Tuning   controllers.Tuning
	Metrics  *controllers.Metrics
	// Tenant: the operator runs on Roles only, without cluster targets.
	Tenant bool
}

// SetupWithManager registers the reconciler; sink changes requeue the
// inventories of their namespace.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	toInventories := r.Metrics.AllIn("kollectinventory", r.Client, &kollectv1alpha1.KollectInventoryList{})
	if err := controllers.StatusController(mgr, "kollectinventory", status.Inventory, r.Status, r.Tuning); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr)
	if !r.Tenant {
		// A cluster target is expected only where its selection may
		// collect: a namespace's labels decide that for its inventories.
		b = b.Watches(&kollectv1alpha1.KollectClusterTarget{}, toInventories, builder.WithPredicates(controllers.SpecChanged())).
			Watches(&corev1.Namespace{}, r.Metrics.Inside("kollectinventory", r.Client, &kollectv1alpha1.KollectInventoryList{}),
				builder.WithPredicates(predicate.LabelChangedPredicate{}))
	}
	return b.
		Named("kollectinventory").
		For(&kollectv1alpha1.KollectInventory{}, builder.WithPredicates(controllers.SpecChanged())).
		Watches(&kollectv1alpha1.KollectSnapshotSink{}, toInventories, builder.WithPredicates(controllers.SpecChanged())).
		Watches(&kollectv1alpha1.KollectDatabaseSink{}, toInventories, builder.WithPredicates(controllers.SpecChanged())).
		Watches(&kollectv1alpha1.KollectEventSink{}, toInventories, builder.WithPredicates(controllers.SpecOrAnnotationsChanged())).
		// Targets appearing, going or suspended change what the inventory
		// waits for before it exports (a cluster target, having no
		// namespace, requeues the inventories of every namespace).
		Watches(&kollectv1alpha1.KollectTarget{}, toInventories, builder.WithPredicates(controllers.SpecChanged())).
		// A scope change re-checks the inventories of its namespace.
		Watches(&kollectv1alpha1.KollectScope{}, toInventories).
		WithOptions(r.Tuning.Options()).
		Complete(r.Metrics.Instrument("kollectinventory", r))
}

func engineKey(key types.NamespacedName) string { return string(status.Inventory) + ":" + key.String() }

func identity(inv *kollectv1alpha1.KollectInventory) rows.Identity {
	return rows.Identity{Namespace: inv.Namespace, Name: inv.Name, Generation: inv.Generation}
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var inv kollectv1alpha1.KollectInventory
	cleanup := func(ctx context.Context) error {
		r.Engine.DrainInventory(ctx, engineKey(req.NamespacedName))
		if compile.CheckInventoryNamespace(inv.Namespace) != nil {
			return nil // it never exported; its identity's rows are the cluster inventories'
		}
		err := r.Resolver.Cleanup(ctx, r.bindings(&inv), identity(&inv))
		var ce *CleanupError
		if errors.As(err, &ce) && ce.Terminal && r.namespaceGoing(ctx, inv.Namespace) {
			// Retrying cannot help, and holding the finalizer would hold
			// the namespace's deletion for good.
			log.FromContext(ctx).Error(err, "the inventory's namespace is being deleted and its cleanup cannot succeed: its rows stay in those sinks", "inventory", req.String())
			return nil
		}
		return r.cleanupStatus(ctx, req.NamespacedName, inv.Generation, err)
	}
	if done, err := controllers.Begin(ctx, r.Client, req.NamespacedName, &inv, Finalizer, func() { r.release(req.NamespacedName) }, cleanup); done {
		return reconcile.Result{}, err
	}
	verdict := status.Verdict{Generation: inv.Generation}
	degrade := func(reason, msg string) (reconcile.Result, error) {
		if err := ctx.Err(); err != nil {
			// A reconcile whose context ended (the manager stopping) saw a
			// lookup fail for that reason: it changes nothing.
			return reconcile.Result{}, err
		}
		r.Engine.RemoveInventory(engineKey(req.NamespacedName))
		verdict.Reason, verdict.Message = reason, msg
		return reconcile.Result{}, r.Status.Write(ctx, status.Key{Kind: status.Inventory, NamespacedName: req.NamespacedName}, verdict)
	}
	if err := compile.CheckInventoryNamespace(inv.Namespace); err != nil {
		return degrade(ReasonReservedNamespace, err.Error())
	}
	if inv.Spec.Suspend {
		return degrade(ReasonSuspended, "spec.suspend is true: exports stopped")
	}
	if err := compile.CheckRefs(inv.Spec.SinkRefs, inv.Namespace, false); err != nil {
		return degrade(ReasonInvalidSinkRef, err.Error())
	}
	ceiling, err := scope.Namespaced(ctx, r.Client, inv.Namespace)
	if err != nil {
		return degrade(scope.ReasonLookupFailed, err.Error())
	}
	if v := ceiling.CheckSinks(inv.Spec.SinkRefs); v != nil {
		return degrade(v.Reason, v.Message)
	}
	b := r.bindings(&inv)
	b.Floor = ceiling.Floor()
	bindings, reason, err := r.Resolver.Resolve(ctx, b)
	if err != nil {
		if reason == "" {
			return reconcile.Result{}, err
		}
		return degrade(reason, err.Error())
	}
	expect, err := ExpectedTargets(ctx, r.Client, inv.Namespace, !r.Tenant)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.Engine.UpsertInventory(engine.InventorySpec{Key: engineKey(req.NamespacedName), Kind: string(status.Inventory), ID: identity(&inv),
		Bindings: bindings, Expect: expect}); errors.Is(err, engine.ErrStopped) {
		return reconcile.Result{}, nil // shutting down: the next leader applies it
	} else if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.Status.Write(ctx, status.Key{Kind: status.Inventory, NamespacedName: req.NamespacedName}, verdict)
}

func (r *Reconciler) bindings(inv *kollectv1alpha1.KollectInventory) Bindings {
	return Bindings{Owner: inv.Namespace + "/" + inv.Name, OwnerKind: "KollectInventory", Refs: inv.Spec.SinkRefs,
		SinkNamespace: func(kollectv1alpha1.InventorySinkRef) string { return inv.Namespace }, Interval: string(inv.Spec.ExportMinInterval),
		MaxBytes: inv.Spec.MaxExportBytes}
}

// cleanupStatus reports a failed cleanup as Degraded while the finalizer
// holds the inventory; it returns err (and a failed status write).
func (r *Reconciler) cleanupStatus(ctx context.Context, key types.NamespacedName, gen int64, err error) error {
	var ce *CleanupError
	if errors.As(err, &ce) {
		return errors.Join(err, r.Status.Write(ctx, status.Key{Kind: status.Inventory, NamespacedName: key}, status.Verdict{Generation: gen, Reason: ce.Reason(), Message: ce.Msg}))
	}
	return err
}

// namespaceGoing reports whether namespace is being deleted (false when
// that cannot be read).
func (r *Reconciler) namespaceGoing(ctx context.Context, namespace string) bool {
	var ns corev1.Namespace
	if err := r.Client.Get(ctx, types.NamespacedName{Name: namespace}, &ns); err != nil {
		return false
	}
	return !ns.DeletionTimestamp.IsZero()
}

func (r *Reconciler) release(key types.NamespacedName) {
	r.Engine.RemoveInventory(engineKey(key))
	if compile.CheckInventoryNamespace(key.Namespace) == nil {
		// In the reserved namespace the backends owned as "cluster/<name>"
		// are a cluster inventory's: never built for this one.
		r.Resolver.Backends.Forget(key.String())
	}
	r.Status.Forget(status.Key{Kind: status.Inventory, NamespacedName: key})
}

func interval(values ...string) time.Duration {
	for _, v := range values {
		if v == "" {
			continue
		}
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return defaultInterval
}
