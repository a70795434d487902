package connectiontest

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/clock"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/backends"
	"kollect.dev/kollect/pipeline/controllers"
)

// Condition types and reasons.
const (
	TypeConnectionVerified = "ConnectionVerified"
	TypeReady              = "Ready"
	ReasonConnectionOK     = "ConnectionOK"
	ReasonProbeSucceeded   = "ProbeSucceeded"
	ReasonInvalidSinkRef   = "InvalidSinkRef"
	ReasonSinkNotFound     = "SinkNotFound"
	defaultTTL             = 300 * time.Second
)

// Prober tests a sink's connection.
type Prober interface {
	Probe(ctx context.Context, c client.Reader, sink client.Object) (msg, reason string, err error)
}

// Reconciler reconciles KollectConnectionTests.
type Reconciler struct {
	Client client.Client
	// Prober probes sinks of every family (the backends registry).
	Prober  Prober
	Metrics *controllers.Metrics
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("kollectconnectiontest").
		For(&kollectv1alpha1.KollectConnectionTest{}).
		Complete(r.Metrics.Instrument("kollectconnectiontest", r))
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return clock.RealClock{}.Now()
}

// sinkOf names the one sink a test refers to.
func sinkOf(t *kollectv1alpha1.KollectConnectionTest) (client.Object, string, error) {
	ref := t.Spec.SinkRef
	var objs []client.Object
	var name string
	if ref.SnapshotSinkRef != "" {
		objs, name = append(objs, &kollectv1alpha1.KollectSnapshotSink{}), ref.SnapshotSinkRef
	}
	if ref.DatabaseSinkRef != "" {
		objs, name = append(objs, &kollectv1alpha1.KollectDatabaseSink{}), ref.DatabaseSinkRef
	}
	if ref.EventSinkRef != "" {
		objs, name = append(objs, &kollectv1alpha1.KollectEventSink{}), ref.EventSinkRef
	}
	if len(objs) != 1 {
		return nil, "", fmt.Errorf("spec.sinkRef: set exactly one of snapshotSinkRef, databaseSinkRef, eventSinkRef")
	}
	return objs[0], name, nil
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var t kollectv1alpha1.KollectConnectionTest
	if err := r.Client.Get(ctx, req.NamespacedName, &t); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !t.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	ttl := defaultTTL
	if t.Spec.TTLSecondsAfterFinished != nil {
		ttl = time.Duration(*t.Spec.TTLSecondsAfterFinished) * time.Second
	}
	if t.Status.Completed && t.Status.ObservedGeneration == t.Generation && t.Status.CompletedAt != nil {
		return r.expire(ctx, &t, t.Status.CompletedAt.Add(ttl))
	}

	base := t.DeepCopy()
	started := r.now()
	msg, reason, err := r.probe(ctx, &t)
	latency := r.now().Sub(started)
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: t.Generation})
	}
	if err != nil {
		set(TypeConnectionVerified, metav1.ConditionFalse, reason, err.Error())
		set(TypeReady, metav1.ConditionFalse, reason, err.Error())
	} else {
		set(TypeConnectionVerified, metav1.ConditionTrue, ReasonConnectionOK, msg)
		set(TypeReady, metav1.ConditionTrue, ReasonProbeSucceeded, msg)
	}
	completedAt := metav1.NewTime(r.now())
	t.Status.Completed, t.Status.CompletedAt, t.Status.ObservedGeneration = true, &completedAt, t.Generation
	t.Status.LatencyMs = latency.Milliseconds()
	if err := r.Client.Status().Patch(ctx, &t, client.MergeFrom(base)); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: ttl}, nil
}

// probe resolves the sink, makes it the test's owner and probes it. Every
// failure is a result (a reason and an error), never a retry: the test is
// one probe, and a spec change runs it again.
func (r *Reconciler) probe(ctx context.Context, t *kollectv1alpha1.KollectConnectionTest) (msg, reason string, err error) {
	sink, name, err := sinkOf(t)
	if err != nil {
		return "", ReasonInvalidSinkRef, err
	}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: name}, sink); err != nil {
		if apierrors.IsNotFound(err) {
			return "", ReasonSinkNotFound, fmt.Errorf("sink %q not found in namespace %q", name, t.Namespace)
		}
		return "", ReasonSinkNotFound, fmt.Errorf("reading sink %q: %w", name, err)
	}
	if t.Spec.OwnerSink == nil || *t.Spec.OwnerSink {
		r.own(ctx, t, sink)
	}
	msg, reason, err = r.Prober.Probe(ctx, r.Client, sink)
	_, typ := backends.Kind(sink)
	r.Metrics.ConnectionTest(typ, err == nil)
	return msg, reason, err
}

// own makes the sink the test's controller, so deleting the sink deletes
// the test. A test another controller owns keeps its owner.
func (r *Reconciler) own(ctx context.Context, t *kollectv1alpha1.KollectConnectionTest, sink client.Object) {
	if metav1.IsControlledBy(t, sink) {
		return
	}
	base := t.DeepCopy()
	if err := controllerutil.SetControllerReference(sink, t, r.Client.Scheme()); err != nil {
		log.FromContext(ctx).Info("connection test keeps its owner", "reason", err.Error())
		return
	}
	if err := r.Client.Patch(ctx, t, client.MergeFrom(base)); err != nil {
		log.FromContext(ctx).Info("cannot set the connection test's owner", "error", err.Error())
	}
}

// expire deletes a completed test once its TTL has passed, else requeues
// for the rest of it.
func (r *Reconciler) expire(ctx context.Context, t *kollectv1alpha1.KollectConnectionTest, deadline time.Time) (reconcile.Result, error) {
	if left := deadline.Sub(r.now()); left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	err := r.Client.Delete(ctx, t, client.Preconditions{UID: &t.UID})
	return reconcile.Result{}, client.IgnoreNotFound(err)
}
