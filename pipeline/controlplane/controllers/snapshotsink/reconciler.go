package snapshotsink

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/controlplane/backends"
	"kollect.dev/kollect/pipeline/controlplane/controllers"
	"kollect.dev/kollect/pipeline/model/endpoint"
	"kollect.dev/kollect/sinks/git"
)

// Annotation that forces a probe even when spec.connectionTest is false.
const TestConnectionAnnotation = "kollect.dev/test-connection"

// Condition types and reasons (API.md §4).
const (
	TypeConnectionVerified = "ConnectionVerified"
	TypeDegraded           = "Degraded"
	TypeTLSInsecure        = "TLSInsecure"
	ReasonConnectionOK     = "ConnectionOK"
	ReasonSecretFailed     = "SecretResolveFailed"
	ReasonTestFailed       = "ConnectionTestFailed"
	probeTimeout           = 15 * time.Second
)

// Reconciler reconciles KollectSnapshotSinks.
type Reconciler struct {
	Client  client.Client
	Policy  endpoint.Policy
	Metrics *controllers.Metrics
	// RetryAfter is the delay before a failed probe is tried again.
	RetryAfter time.Duration
	// Events records probe failures and recoveries.
	Events events.EventRecorder
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("kollectsnapshotsink").
		For(&kollectv1alpha1.KollectSnapshotSink{}, builder.WithPredicates(controllers.SpecOrAnnotationsChanged())).
		Watches(&kollectv1alpha1.KollectScope{}, controllers.AllIn(r.Client, &kollectv1alpha1.KollectSnapshotSinkList{})).
		Complete(r.Metrics.Instrument("kollectsnapshotsink", r))
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var s kollectv1alpha1.KollectSnapshotSink
	if err := r.Client.Get(ctx, req.NamespacedName, &s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if err := ApplyPreview(ctx, r.Client, &s, &s.Status, time.Now()); err != nil {
		return reconcile.Result{}, err
	}
	forced := strings.EqualFold(strings.TrimSpace(s.Annotations[TestConnectionAnnotation]), "true")
	enabled := s.Spec.ConnectionTest == nil || *s.Spec.ConnectionTest
	if !enabled && !forced {
		return reconcile.Result{}, nil
	}
	reason, probeErr := r.probe(ctx, &s)
	return RecordProbe(ctx, r.Client, &s, &s.Status.Conditions, &s.Status.ObservedGeneration, s.Spec.TLS,
		forced && !enabled, Probe{OK: git.ProbeMessage, Reason: reason, Err: probeErr}, r.RetryAfter, r.Events)
}

// Probe is the outcome of a connection probe: OK is the ConnectionVerified
// message on success; Reason and Err say why it failed.
type Probe struct {
	OK     string
	Reason string
	Err    error
}

// RecordProbe writes a probe's outcome into a sink's status
// (ConnectionVerified, Degraded, TLSInsecure), retries a failed probe after
// retryAfter, and drops the one-off test-connection annotation once it
// succeeded (oneOff: the sink asked for no regular probes). Every sink kind
// records its probes through it.
func RecordProbe(ctx context.Context, c client.Client, obj client.Object, conds *[]metav1.Condition, observed *int64,
	tls *kollectv1alpha1.TLSSpec, oneOff bool, p Probe, retryAfter time.Duration, rec events.EventRecorder) (reconcile.Result, error) {
	base := obj.DeepCopyObject().(client.Object)
	before := append([]metav1.Condition(nil), *conds...)
	gen := obj.GetGeneration()
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	if p.Err != nil {
		set(TypeConnectionVerified, metav1.ConditionFalse, p.Reason, p.Err.Error())
		set(TypeDegraded, metav1.ConditionTrue, p.Reason, p.Err.Error())
	} else {
		set(TypeConnectionVerified, metav1.ConditionTrue, ReasonConnectionOK, p.OK)
		meta.RemoveStatusCondition(conds, TypeDegraded)
	}
	if p.Err == nil && tls != nil && tls.InsecureSkipVerify {
		set(TypeTLSInsecure, metav1.ConditionTrue, "InsecureSkipVerify", "server certificates are not verified")
	} else {
		meta.RemoveStatusCondition(conds, TypeTLSInsecure)
	}
	*observed = gen
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return reconcile.Result{}, err
	}
	announceProbe(rec, obj, before, *conds)
	if p.Err != nil {
		return reconcile.Result{RequeueAfter: retryAfter}, nil
	}
	if oneOff {
		// A one-off probe that succeeded: drop the request, as upstream does.
		patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
		ann := obj.GetAnnotations()
		delete(ann, TestConnectionAnnotation)
		obj.SetAnnotations(ann)
		return reconcile.Result{}, c.Patch(ctx, obj, patch)
	}
	return reconcile.Result{}, nil
}

// announceProbe records an event when a probe's outcome changes: a
// Warning when the sink stops being reachable (or fails for another
// reason), a Normal event when it is reachable again.
func announceProbe(rec events.EventRecorder, obj client.Object, before, after []metav1.Condition) {
	if rec == nil {
		return
	}
	was, now := meta.FindStatusCondition(before, TypeConnectionVerified), meta.FindStatusCondition(after, TypeConnectionVerified)
	switch {
	case now == nil:
	case now.Status == metav1.ConditionFalse && (was == nil || was.Status != metav1.ConditionFalse || was.Reason != now.Reason):
		rec.Eventf(obj, nil, corev1.EventTypeWarning, now.Reason, "Probe", "%s", now.Message)
	case now.Status == metav1.ConditionTrue && was != nil && was.Status == metav1.ConditionFalse:
		rec.Eventf(obj, nil, corev1.EventTypeNormal, ReasonConnectionOK, "Probe", "%s", now.Message)
	}
}

// Probe tests a snapshot sink's connection as the reconciler does: the
// message of ConnectionVerified on success, else a reason and an error.
func (r *Reconciler) Probe(ctx context.Context, _ client.Reader, sink client.Object) (msg, reason string, err error) {
	s, ok := sink.(*kollectv1alpha1.KollectSnapshotSink)
	if !ok {
		return "", ReasonTestFailed, fmt.Errorf("not a KollectSnapshotSink: %T", sink)
	}
	if reason, err := r.probe(ctx, s); err != nil {
		return "", reason, err
	}
	return git.ProbeMessage, "", nil
}

func (r *Reconciler) probe(ctx context.Context, s *kollectv1alpha1.KollectSnapshotSink) (string, error) {
	typ := s.Spec.Type
	if typ == "" && s.Spec.Git != nil {
		typ = "git"
	}
	if typ != "git" {
		return ReasonTestFailed, fmt.Errorf("%s sinks are not implemented in this version of Kollect", typ)
	}
	creds, err := backends.ReadCredentials(ctx, r.Client, s)
	if err != nil {
		return ReasonSecretFailed, err
	}
	cfg, err := git.FromSink(s, creds.Data, "")
	if err != nil {
		return ReasonTestFailed, err
	}
	if err := r.Policy.CheckURL(ctx, cfg.URL, "https", "http", "ssh", "file"); err != nil {
		return ReasonTestFailed, err
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if err := git.Probe(pctx, cfg); err != nil {
		return ReasonTestFailed, err
	}
	return "", nil
}
