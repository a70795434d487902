package familysink

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/controllers"
	"kollect.dev/kollect/pipeline/controllers/snapshotsink"
)

// sinkObject is a family sink: its common fields, type and status.
type sinkObject interface {
	client.Object
	common() (typ string, c *kollectv1alpha1.SinkCommonFields, st *kollectv1alpha1.FamilySinkStatus)
}

type databaseSink struct {
	kollectv1alpha1.KollectDatabaseSink
}

func (d *databaseSink) common() (string, *kollectv1alpha1.SinkCommonFields, *kollectv1alpha1.FamilySinkStatus) {
	return d.Spec.Type, &d.Spec.SinkCommonFields, &d.Status
}

type eventSink struct {
	kollectv1alpha1.KollectEventSink
}

func (e *eventSink) common() (string, *kollectv1alpha1.SinkCommonFields, *kollectv1alpha1.FamilySinkStatus) {
	return e.Spec.Type, &e.Spec.SinkCommonFields, &e.Status
}

// Prober tests a sink's connection.
type Prober interface {
	Probe(ctx context.Context, c client.Reader, sink client.Object) (msg, reason string, err error)
}

// Reconciler reconciles one family sink kind.
type Reconciler struct {
	Client  client.Client
	Prober  Prober
	Metrics *controllers.Metrics
	// RetryAfter is the delay before a failed probe is tried again.
	RetryAfter time.Duration
	name       string
	newObj     func() (client.Object, func() sinkObject)
}

// SetupDatabaseSinks registers the KollectDatabaseSink reconciler.
func SetupDatabaseSinks(mgr ctrl.Manager, p Prober, m *controllers.Metrics) error {
	r := &Reconciler{Client: mgr.GetClient(), Prober: p, Metrics: m, RetryAfter: time.Minute, name: "kollectdatabasesink", newObj: func() (client.Object, func() sinkObject) {
		o := &databaseSink{}
		return &o.KollectDatabaseSink, func() sinkObject { return o }
	}}
	return ctrl.NewControllerManagedBy(mgr).Named(r.name).For(&kollectv1alpha1.KollectDatabaseSink{}, builder.WithPredicates(controllers.SpecOrAnnotationsChanged())).Complete(m.Instrument(r.name, r))
}

// SetupEventSinks registers the KollectEventSink reconciler.
func SetupEventSinks(mgr ctrl.Manager, p Prober, m *controllers.Metrics) error {
	r := &Reconciler{Client: mgr.GetClient(), Prober: p, Metrics: m, RetryAfter: time.Minute, name: "kollecteventsink", newObj: func() (client.Object, func() sinkObject) {
		o := &eventSink{}
		return &o.KollectEventSink, func() sinkObject { return o }
	}}
	return ctrl.NewControllerManagedBy(mgr).Named(r.name).For(&kollectv1alpha1.KollectEventSink{}, builder.WithPredicates(controllers.SpecOrAnnotationsChanged())).Complete(m.Instrument(r.name, r))
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	raw, wrap := r.newObj()
	if err := r.Client.Get(ctx, req.NamespacedName, raw); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	obj := wrap()
	_, common, st := obj.common()
	forced := strings.EqualFold(strings.TrimSpace(raw.GetAnnotations()[snapshotsink.TestConnectionAnnotation]), "true")
	if common.ConnectionTest != nil && !*common.ConnectionTest && !forced {
		return reconcile.Result{}, nil
	}
	okMsg, reason, probeErr := r.Prober.Probe(ctx, r.Client, raw)
	base := raw.DeepCopyObject().(client.Object)
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: raw.GetGeneration()})
	}
	if probeErr != nil {
		set(snapshotsink.TypeConnectionVerified, metav1.ConditionFalse, reason, probeErr.Error())
		set(snapshotsink.TypeDegraded, metav1.ConditionTrue, reason, probeErr.Error())
	} else {
		set(snapshotsink.TypeConnectionVerified, metav1.ConditionTrue, snapshotsink.ReasonConnectionOK, okMsg)
		meta.RemoveStatusCondition(&st.Conditions, snapshotsink.TypeDegraded)
	}
	if common.TLS != nil && common.TLS.InsecureSkipVerify && probeErr == nil {
		set(snapshotsink.TypeTLSInsecure, metav1.ConditionTrue, "InsecureSkipVerify", "server certificates are not verified")
	} else {
		meta.RemoveStatusCondition(&st.Conditions, snapshotsink.TypeTLSInsecure)
	}
	st.ObservedGeneration = raw.GetGeneration()
	if err := r.Client.Status().Patch(ctx, raw, client.MergeFrom(base)); err != nil {
		return reconcile.Result{}, err
	}
	if probeErr != nil {
		return reconcile.Result{RequeueAfter: r.RetryAfter}, nil
	}
	if forced && common.ConnectionTest != nil && !*common.ConnectionTest {
		// A one-off probe that succeeded: drop the request, as upstream does.
		patch := client.MergeFrom(raw.DeepCopyObject().(client.Object))
		ann := raw.GetAnnotations()
		delete(ann, snapshotsink.TestConnectionAnnotation)
		raw.SetAnnotations(ann)
		return reconcile.Result{}, r.Client.Patch(ctx, raw, patch)
	}
	return reconcile.Result{}, nil
}
