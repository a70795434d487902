package familysink

import (
	"context"
	"strings"
	"time"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/controlplane/controllers"
	"kollect.dev/kollect/pipeline/controlplane/controllers/snapshotsink"
)

// sinkObject is a family sink: its common fields and status.
type sinkObject interface {
	client.Object
	common() (*kollectv1alpha1.SinkCommonFields, *kollectv1alpha1.FamilySinkStatus)
}

type databaseSink struct {
	kollectv1alpha1.KollectDatabaseSink
}

func (d *databaseSink) common() (*kollectv1alpha1.SinkCommonFields, *kollectv1alpha1.FamilySinkStatus) {
	return &d.Spec.SinkCommonFields, &d.Status
}

type eventSink struct {
	kollectv1alpha1.KollectEventSink
}

func (e *eventSink) common() (*kollectv1alpha1.SinkCommonFields, *kollectv1alpha1.FamilySinkStatus) {
	return &e.Spec.SinkCommonFields, &e.Status
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
	// Events records probe failures and recoveries.
	Events events.EventRecorder
	name   string
	newObj func() (client.Object, func() sinkObject)
}

// SetupDatabaseSinks registers the KollectDatabaseSink reconciler.
func SetupDatabaseSinks(mgr ctrl.Manager, p Prober, m *controllers.Metrics, rec events.EventRecorder) error {
	r := &Reconciler{Client: mgr.GetClient(), Prober: p, Metrics: m, RetryAfter: time.Minute, Events: rec, name: "kollectdatabasesink", newObj: func() (client.Object, func() sinkObject) {
		o := &databaseSink{}
		return &o.KollectDatabaseSink, func() sinkObject { return o }
	}}
	return ctrl.NewControllerManagedBy(mgr).Named(r.name).For(&kollectv1alpha1.KollectDatabaseSink{}, builder.WithPredicates(controllers.SpecOrAnnotationsChanged())).
		Watches(&kollectv1alpha1.KollectScope{}, controllers.AllIn(r.Client, &kollectv1alpha1.KollectDatabaseSinkList{})).Complete(m.Instrument(r.name, r))
}

// SetupEventSinks registers the KollectEventSink reconciler.
func SetupEventSinks(mgr ctrl.Manager, p Prober, m *controllers.Metrics, rec events.EventRecorder) error {
	r := &Reconciler{Client: mgr.GetClient(), Prober: p, Metrics: m, RetryAfter: time.Minute, Events: rec, name: "kollecteventsink", newObj: func() (client.Object, func() sinkObject) {
		o := &eventSink{}
		return &o.KollectEventSink, func() sinkObject { return o }
	}}
	return ctrl.NewControllerManagedBy(mgr).Named(r.name).For(&kollectv1alpha1.KollectEventSink{}, builder.WithPredicates(controllers.SpecOrAnnotationsChanged())).
		Watches(&kollectv1alpha1.KollectScope{}, controllers.AllIn(r.Client, &kollectv1alpha1.KollectEventSinkList{})).Complete(m.Instrument(r.name, r))
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	raw, wrap := r.newObj()
	if err := r.Client.Get(ctx, req.NamespacedName, raw); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	obj := wrap()
	common, st := obj.common()
	if err := snapshotsink.ApplyPreview(ctx, r.Client, raw, st, time.Now()); err != nil {
		return reconcile.Result{}, err
	}
	forced := strings.EqualFold(strings.TrimSpace(raw.GetAnnotations()[snapshotsink.TestConnectionAnnotation]), "true")
	if common.ConnectionTest != nil && !*common.ConnectionTest && !forced {
		return reconcile.Result{}, nil
	}
	okMsg, reason, probeErr := r.Prober.Probe(ctx, r.Client, raw)
	oneOff := forced && common.ConnectionTest != nil && !*common.ConnectionTest
	return snapshotsink.RecordProbe(ctx, r.Client, raw, &st.Conditions, &st.ObservedGeneration, common.TLS, oneOff,
		snapshotsink.Probe{OK: okMsg, Reason: reason, Err: probeErr}, r.RetryAfter, r.Events)
}
