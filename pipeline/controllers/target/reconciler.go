package target

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"kollect.dev/kollect/actors/engine"
	"kollect.dev/kollect/actors/messages"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/compile"
	"kollect.dev/kollect/model/selection"
	"kollect.dev/kollect/pipeline/controllers"
	"kollect.dev/kollect/pipeline/scope"
	"kollect.dev/kollect/pipeline/status"
)

// Finalizer releases the target's collection before it is deleted.
const Finalizer = "kollect.dev/target-cleanup"

// Degraded reasons.
const (
	ReasonSuspended          = "Suspended"
	ReasonMissingProfileRef  = "MissingProfileRef"
	ReasonProfileNotFound    = "ProfileNotFound"
	ReasonInformerRegFailed  = "InformerRegistrationFailed"
	ReasonExtractionFailed   = "ExtractionFailed"
	profileRefIndex          = "spec.profileRef"
	retryUnservedKindsPeriod = 15 * time.Second
)

// Engine is what the reconciler drives.
type Engine interface {
	UpsertTarget(ctx context.Context, spec engine.TargetSpec) error
	RemoveTarget(ref messages.TargetRef)
	FreezeTarget(ref messages.TargetRef)
}

// StatusWriter writes verdicts merged with the engine's reports, and
// turns those reports into reconcile requests.
type StatusWriter interface {
	Write(ctx context.Context, key status.Key, v status.Verdict) error
	Forget(key status.Key)
	Source(kind status.Kind) source.Source
	Refresh(ctx context.Context, key status.Key) error
}

// Namespaces lists namespaces for status.
type Namespaces interface {
	NamespaceNames() []string
	Namespace(name string) *unstructured.Unstructured
	controllers.NamespaceWatcher
}

// Reconciler reconciles KollectTargets.
type Reconciler struct {
	Client     client.Client
	Engine     Engine
	Status     StatusWriter
	Namespaces Namespaces
	Defaults   compile.Defaults
	// Resync requeues Ready targets (--target-count-resync); namespace
	// changes and counts arrive as events, so this is a safety net only.
	Resync  time.Duration
	Tuning  controllers.Tuning
	Metrics *controllers.Metrics
	// Only, in tenant mode, are the namespaces the operator may read: a
	// target reads within them, through informers scoped to one of them.
	Only []string
	// AllNamespaces lifts the default namespace ceiling (--namespace-ceiling
	// all): without a KollectScope listing namespaces, a target reads every
	// namespace, as upstream. Otherwise it reads its own namespace only.
	AllNamespaces bool
	// AttributeLabels keeps profile metrics' attribute labels
	// (--metrics-attribute-labels); otherwise they are dropped.
	AttributeLabels bool

	mu       sync.Mutex
	applied  map[types.NamespacedName]string // target+profile generations in the engine
	members  *controllers.Membership         // the namespaces each target matched
	profiles compile.Cache                   // what each profile version compiled to
}

func (r *Reconciler) appliedGen(key types.NamespacedName) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied[key]
}

func (r *Reconciler) setApplied(key types.NamespacedName, gen string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen == "" {
		delete(r.applied, key)
		return
	}
	if r.applied == nil {
		r.applied = map[types.NamespacedName]string{}
	}
	r.applied[key] = gen
}

// SetupWithManager registers the reconciler and its watches.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	r.applied = map[types.NamespacedName]string{}
	r.members = controllers.NewMembership()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &kollectv1alpha1.KollectTarget{}, profileRefIndex, func(o client.Object) []string {
		return []string{o.(*kollectv1alpha1.KollectTarget).Spec.ProfileRef}
	}); err != nil {
		return fmt.Errorf("index targets by profile: %w", err)
	}
	// Engine reports (counts, extraction failures) refresh status alone.
	if err := controllers.StatusController(mgr, "kollecttarget", status.Target, r.Status, r.Tuning); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("kollecttarget").
		For(&kollectv1alpha1.KollectTarget{}, builder.WithPredicates(controllers.SpecChanged())).
		Watches(&kollectv1alpha1.KollectProfile{}, handler.EnqueueRequestsFromMapFunc(r.targetsOfProfile)).
		// A scope change re-checks every target of its namespace.
		Watches(&kollectv1alpha1.KollectScope{}, r.Metrics.AllIn("kollecttarget", r.Client, &kollectv1alpha1.KollectTargetList{})).
		// Namespace changes arrive as events, for the targets whose
		// matched namespaces (and so status, or scope verdict) they move.
		WatchesRawSource(controllers.NamespaceChanges(r.Namespaces, "kollecttarget", r.members)).
		WithOptions(r.Tuning.Options()).
		Complete(r.Metrics.Instrument("kollecttarget", r))
}

// ProfileMetrics are a profile's series (spec.metrics) as a target
// computes them. Attribute values become labels only when attributeLabels
// (--metrics-attribute-labels): whoever scrapes /metrics may not be
// allowed to read the rows, so by default a labelled series is summed
// into one.
func ProfileMetrics(p *kollectv1alpha1.KollectProfile, attributeLabels bool) []engine.Metric {
	out := make([]engine.Metric, 0, len(p.Spec.Metrics))
	for _, m := range p.Spec.Metrics {
		var labels []string
		if attributeLabels {
			labels = slices.Clone(m.Labels)
		}
		out = append(out, engine.Metric{Name: m.Name, Path: m.Path, Labels: labels})
	}
	return out
}

func (r *Reconciler) targetsOfProfile(ctx context.Context, o client.Object) []reconcile.Request {
	var list kollectv1alpha1.KollectTargetList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{profileRefIndex: o.GetName()}); err != nil {
		r.Metrics.MapListFailed("kollecttarget", "KollectProfile")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, t := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&t)})
	}
	return reqs
}

func ref(key types.NamespacedName) messages.TargetRef {
	return messages.TargetRef{Kind: "KollectTarget", Namespace: key.Namespace, Name: key.Name}
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var t kollectv1alpha1.KollectTarget
	if done, err := controllers.Begin(ctx, r.Client, req.NamespacedName, &t, Finalizer, func() { r.release(req.NamespacedName) }); done {
		return reconcile.Result{}, err
	}
	verdict := status.Verdict{Generation: t.Generation, Detail: fmt.Sprintf("profileRef %q resolved", t.Spec.ProfileRef), Rules: len(t.Spec.ResourceRules)}
	// The namespaces this reconcile matched, for the namespace events
	// that follow: none until the selection is compiled and checked.
	since, match := r.members.Seq(), controllers.Match{}
	settled := func(res reconcile.Result) reconcile.Result {
		if r.members.Record(req.NamespacedName, since, match) {
			res.RequeueAfter = time.Second // a namespace moved while this one read them
		}
		return res
	}
	degrade := func(reason, msg string) (reconcile.Result, error) {
		if reason == ReasonSuspended {
			r.Engine.RemoveTarget(ref(req.NamespacedName)) // suspended: collection stops, rows go
		} else {
			// Transient or fixable: keep the last good rows in every sink.
			r.Engine.FreezeTarget(ref(req.NamespacedName))
		}
		r.setApplied(req.NamespacedName, "")
		verdict.Reason, verdict.Message = reason, msg
		if err := r.Status.Write(ctx, status.Key{Kind: status.Target, NamespacedName: req.NamespacedName}, verdict); err != nil {
			return reconcile.Result{}, err
		}
		return settled(reconcile.Result{}), nil
	}
	if t.Spec.Suspend {
		return degrade(ReasonSuspended, "spec.suspend is true: collection stopped")
	}
	if t.Spec.ProfileRef == "" {
		return degrade(ReasonMissingProfileRef, "spec.profileRef is empty")
	}
	var p kollectv1alpha1.KollectProfile
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: t.Spec.ProfileRef}, &p)
	r.Metrics.RefResolved("KollectTarget", "profile", err)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return degrade(ReasonProfileNotFound, fmt.Sprintf("KollectProfile %q not found in namespace %q", t.Spec.ProfileRef, t.Namespace))
		}
		return reconcile.Result{}, err
	}
	c, err := r.profiles.Compile(&t, &p, r.Defaults)
	if err != nil {
		return degrade(ReasonExtractionFailed, err.Error())
	}
	verdict.Profile, verdict.GVK = t.Spec.ProfileRef, status.GVKLabel(c.GVK)
	ceiling, err := scope.Namespaced(ctx, r.Client, t.Namespace)
	if err != nil {
		return degrade(scope.ReasonLookupFailed, err.Error())
	}
	if !r.AllNamespaces {
		ceiling = ceiling.ClosedTo(t.Namespace)
	}
	var v *scope.Violation
	match, verdict.Effective, v = CheckScope(ceiling, r.Namespaces, c, t.Namespace)
	verdict.Matched = match.Names
	if v != nil {
		return degrade(v.Reason, v.Message)
	}

	if len(r.Only) > 0 {
		if err := pinToWatched(c, r.Only); err != nil {
			return degrade(ReasonInformerRegFailed, err.Error())
		}
	}

	generations := fmt.Sprintf("%d/%s/%s", t.Generation, p.ResourceVersion, ceiling.Version())
	forbidden := false
	if r.appliedGen(req.NamespacedName) != generations {
		err := r.Engine.UpsertTarget(ctx, engine.TargetSpec{Ref: ref(req.NamespacedName), Generation: t.Generation,
			ProfileGVK: c.GVK, Selection: c.Selection, Extractor: c.Extractor, Namespaces: c.Namespaces,
			Profile: t.Spec.ProfileRef, Metrics: ProfileMetrics(&p, r.AttributeLabels)})
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
			reason := ReasonInformerRegFailed
			var denied *informers.ForbiddenError
			if errors.As(err, &denied) {
				reason = status.ReasonScopeForbidden
			}
			res, werr := degrade(reason, fmt.Sprintf("cannot watch %s: %v", c.GVK, err))
			if werr != nil {
				return res, werr
			}
			if errors.Is(err, informers.ErrNotServed) {
				// Recover on our own once the CRD is installed.
				res.RequeueAfter = retryUnservedKindsPeriod
			} else {
				res.RequeueAfter = 2 * retryUnservedKindsPeriod
			}
			return res, nil
		}
		if !forbidden {
			r.setApplied(req.NamespacedName, generations)
		}
	}
	if err := r.Status.Write(ctx, status.Key{Kind: status.Target, NamespacedName: req.NamespacedName}, verdict); err != nil {
		return reconcile.Result{}, err
	}
	return settled(reconcile.Result{RequeueAfter: r.Resync}), nil
}

func (r *Reconciler) release(key types.NamespacedName) {
	r.Engine.RemoveTarget(ref(key))
	r.setApplied(key, "")
	r.members.Forget(key)
	r.Status.Forget(status.Key{Kind: status.Target, NamespacedName: key})
}

// CheckScope checks a compiled target against the scope in force: the
// kinds it collects, then the namespaces it means to read (the matched set;
// when empty its own namespace). When it passes, the scope's namespace
// ceiling is applied to the selection and the effective namespaces are
// listed under it. Under the operator's default ceiling a target that
// names no namespace at all reads its own: it is narrowed, not refused.
func CheckScope(ceiling *scope.Ceiling, nss Namespaces, c *compile.Compiled, own string) (matched controllers.Match, effective []string, v *scope.Violation) {
	if v := ceiling.CheckGVKs(c.GVKs()); v != nil {
		return controllers.Match{}, nil, v
	}
	if ceiling.Defaulted() && namesNoNamespace(c.Selection) {
		if v := ceiling.CheckNamespaces([]string{own}); v != nil {
			return controllers.Match{}, nil, v // a cluster scope denies the namespace itself
		}
		ceiling.Restrict(c.Selection)
		if c.Namespaces == nil {
			c.Namespaces = []string{own} // as includedNamespaces: [own]: an informer of that namespace will do
		}
		matched = MatchNamespaces(nss, c.Selection)
		return matched, matched.Names, nil
	}
	matched = MatchNamespaces(nss, c.Selection)
	intent := matched.Names
	if len(intent) == 0 {
		intent = []string{own}
	}
	if v := ceiling.CheckNamespaces(intent); v != nil {
		return matched, nil, v
	}
	ceiling.Restrict(c.Selection)
	return matched, Within(matched.Names, c.Selection), nil
}

// namesNoNamespace reports whether a selection leaves namespaces open: no
// include list, no namespace selector (its own or a rule's), no opt-in.
func namesNoNamespace(sel *selection.Set) bool {
	if len(sel.Included) > 0 || sel.NamespaceSelector != nil || sel.OptIn {
		return false
	}
	for _, r := range sel.Rules {
		if r.NamespaceSelector != nil {
			return false
		}
	}
	return true
}

// pinToWatched keeps a tenant-mode target within the watched namespaces
// and gives its informers those it names, or every watched one: a Role
// grants no more.
func pinToWatched(c *compile.Compiled, only []string) error {
	watched := map[string]bool{}
	for _, ns := range only {
		watched[ns] = true
	}
	prev := c.Selection.Within
	c.Selection.Within = func(ns string) bool { return watched[ns] && (prev == nil || prev(ns)) }
	if c.Namespaces == nil {
		c.Namespaces = slices.Clone(only)
		return nil
	}
	for _, ns := range c.Namespaces {
		if !watched[ns] {
			return fmt.Errorf("namespace %q is not watched by this tenant-mode operator (--watch-namespaces %s)", ns, strings.Join(only, ","))
		}
	}
	return nil
}

// MatchNamespaces lists, sorted, the namespaces a selection's intent and
// filters match.
func MatchNamespaces(nss Namespaces, sel *selection.Set) controllers.Match {
	if nss == nil {
		return controllers.Match{}
	}
	// The test is frozen at the selection as it is now: a ceiling applied
	// later (Restrict) narrows what is collected, not what was matched.
	frozen := *sel
	test := func(name string) bool {
		obj := nss.Namespace(name)
		return obj != nil && frozen.NamespaceMatches(selection.NamespaceOf(name, obj))
	}
	var matched []string
	for _, name := range nss.NamespaceNames() {
		if test(name) {
			matched = append(matched, name)
		}
	}
	sort.Strings(matched)
	return controllers.Match{Names: matched, Test: test}
}

// Within keeps the matched namespaces a selection's ceiling allows: the
// effective set.
func Within(matched []string, sel *selection.Set) []string {
	if sel.Within == nil {
		return matched
	}
	var out []string
	for _, ns := range matched {
		if sel.Within(ns) {
			out = append(out, ns)
		}
	}
	return out
}
