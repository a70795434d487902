package clustertarget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kollect.dev/kollect/actors/engine"
	"kollect.dev/kollect/actors/messages"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/compile"
	"kollect.dev/kollect/pipeline/controllers"
	"kollect.dev/kollect/pipeline/controllers/target"
	"kollect.dev/kollect/pipeline/scope"
	"kollect.dev/kollect/pipeline/status"
)

// Finalizer releases the collection before deletion.
const Finalizer = "kollect.dev/cluster-target-cleanup"

// Reconciler reconciles KollectClusterTargets.
type Reconciler struct {
	Client     client.Client
	Engine     target.Engine
	Status     target.StatusWriter
	Namespaces target.Namespaces
	Defaults   compile.Defaults
	// AttributeLabels keeps profile metrics' attribute labels
	// (--metrics-attribute-labels).
	AttributeLabels bool
	Metrics         *controllers.Metrics
	Resync          time.Duration
	Tuning          controllers.Tuning

	mu       sync.Mutex
	applied  map[string]string
	members  *controllers.Membership // the namespaces each target matched
	profiles compile.Cache           // what each profile version compiled to
}

// SetupWithManager registers the reconciler; profile changes requeue every
// cluster target (there are few).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.applied = map[string]string{}
	r.members = controllers.NewMembership()
	if err := controllers.StatusController(mgr, "kollectclustertarget", status.ClusterTarget, r.Status, r.Tuning); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("kollectclustertarget").
		For(&kollectv1alpha1.KollectClusterTarget{}, builder.WithPredicates(controllers.SpecChanged())).
		Watches(&kollectv1alpha1.KollectProfile{}, handler.EnqueueRequestsFromMapFunc(r.all)).
		Watches(&kollectv1alpha1.KollectClusterScope{}, handler.EnqueueRequestsFromMapFunc(r.all)).
		WatchesRawSource(controllers.NamespaceChanges(r.Namespaces, "kollectclustertarget", r.members)).
		WithOptions(r.Tuning.Options()).
		Complete(r.Metrics.Instrument("kollectclustertarget", r))
}

func (r *Reconciler) all(ctx context.Context, _ client.Object) []reconcile.Request {
	var list kollectv1alpha1.KollectClusterTargetList
	if err := r.Client.List(ctx, &list); err != nil {
		r.Metrics.MapListFailed("kollectclustertarget", "all")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, t := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: t.Name}})
	}
	return out
}

func ref(name string) messages.TargetRef {
	return messages.TargetRef{Kind: engine.ClusterTargetKind, Name: name}
}

func key(name string) status.Key {
	return status.Key{Kind: status.ClusterTarget, NamespacedName: types.NamespacedName{Name: name}}
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var ct kollectv1alpha1.KollectClusterTarget
	if done, err := controllers.Begin(ctx, r.Client, req.NamespacedName, &ct, Finalizer, func() { r.release(req.Name) }); done {
		return reconcile.Result{}, err
	}
	pref := ct.Spec.ProfileRef
	verdict := status.Verdict{Generation: ct.Generation, Rules: len(ct.Spec.ResourceRules)}
	// A degraded verdict does not depend on namespaces; a collecting one
	// lists those matched, which namespace events move.
	since, match := r.members.Seq(), controllers.Match{}
	settled := func(res reconcile.Result) reconcile.Result {
		if r.members.Record(req.NamespacedName, since, match) {
			res.RequeueAfter = time.Second // a namespace moved while this one read them
		}
		return res
	}
	degrade := func(reason, msg string) (reconcile.Result, error) {
		if reason == target.ReasonSuspended {
			r.Engine.RemoveTarget(ref(req.Name)) // suspended: collection stops, rows go
		} else {
			// Transient or fixable: keep the last good rows in every sink.
			r.Engine.FreezeTarget(ref(req.Name))
		}
		r.setApplied(req.Name, "")
		verdict.Reason, verdict.Message = reason, msg
		if err := r.Status.Write(ctx, key(req.Name), verdict); err != nil {
			return reconcile.Result{}, err
		}
		return settled(reconcile.Result{}), nil
	}
	if ct.Spec.Suspend {
		return degrade(target.ReasonSuspended, "spec.suspend is true: collection stopped")
	}
	ceiling, err := scope.Cluster(ctx, r.Client)
	if err != nil {
		return degrade(scope.ReasonLookupFailed, err.Error())
	}
	if v := ceiling.CheckStaticRef("profileRef", pref.Namespace, scope.ReasonNamespaceDenied); v != nil {
		return degrade(v.Reason, v.Message)
	}
	var p kollectv1alpha1.KollectProfile
	err = r.Client.Get(ctx, types.NamespacedName{Namespace: pref.Namespace, Name: pref.Name}, &p)
	r.Metrics.RefResolved("KollectClusterTarget", "profile", err)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return degrade(target.ReasonProfileNotFound, fmt.Sprintf("KollectProfile %q not found in namespace %q", pref.Name, pref.Namespace))
		}
		return reconcile.Result{}, err
	}
	c, err := r.profiles.ClusterTarget(&ct, &p, r.Defaults)
	if err != nil {
		return degrade(target.ReasonExtractionFailed, err.Error())
	}
	verdict.Profile, verdict.GVK = pref.Namespace+"/"+pref.Name, status.GVKLabel(c.GVK)
	// The cluster scope's namespace lists filter what a cluster target
	// reads; its kinds are a hard rule.
	if v := ceiling.CheckGVKs(c.GVKs()); v != nil {
		return degrade(v.Reason, v.Message)
	}
	match = target.MatchNamespaces(r.Namespaces, c.Selection)
	verdict.Matched = match.Names
	ceiling.Restrict(c.Selection)
	verdict.Effective = target.Within(verdict.Matched, c.Selection)
	verdict.Detail = fmt.Sprintf("profileRef %q in namespace %q resolved; %d namespace(s) matched", pref.Name, pref.Namespace, len(verdict.Matched))

	generations := fmt.Sprintf("%d/%s/%s", ct.Generation, p.ResourceVersion, ceiling.Version())
	forbidden := false
	if r.appliedGen(req.Name) != generations {
		err := r.Engine.UpsertTarget(ctx, engine.TargetSpec{Ref: ref(req.Name), Generation: ct.Generation, ProfileGVK: c.GVK,
			Selection: c.Selection, Extractor: c.Extractor, Namespaces: c.Namespaces, PerNamespace: true,
			Profile: pref.Namespace + "/" + pref.Name, Metrics: target.ProfileMetrics(&p, r.AttributeLabels)})
		if errors.Is(err, engine.ErrStopped) {
			return reconcile.Result{}, nil // shutting down: the next leader applies it
		}
		var partial *engine.PartialAccessError
		if errors.As(err, &partial) {
			// It runs without the namespaces the operator may not list;
			// not marked applied, so every resync asks again and a Role
			// granted since is used.
			verdict.Forbidden, err = partial.Error(), nil
			forbidden = true
		}
		if err != nil {
			reason := target.ReasonInformerRegFailed
			var denied *informers.ForbiddenError
			if errors.As(err, &denied) {
				reason = status.ReasonScopeForbidden
			}
			res, werr := degrade(reason, fmt.Sprintf("cannot watch %s: %v", c.GVK, err))
			if werr != nil {
				return res, werr
			}
			res.RequeueAfter = 15 * time.Second
			if !errors.Is(err, informers.ErrNotServed) {
				res.RequeueAfter = 30 * time.Second
			}
			return res, nil
		}
		if !forbidden {
			r.setApplied(req.Name, generations)
		}
	}
	if err := r.Status.Write(ctx, key(req.Name), verdict); err != nil {
		return reconcile.Result{}, err
	}
	return settled(reconcile.Result{RequeueAfter: r.Resync}), nil
}

func (r *Reconciler) release(name string) {
	r.Engine.RemoveTarget(ref(name))
	r.setApplied(name, "")
	r.members.Forget(types.NamespacedName{Name: name})
	r.Status.Forget(key(name))
}

func (r *Reconciler) appliedGen(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied[name]
}

func (r *Reconciler) setApplied(name, gen string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case gen == "":
		delete(r.applied, name)
	case r.applied == nil:
		r.applied = map[string]string{name: gen}
	default:
		r.applied[name] = gen
	}
}
