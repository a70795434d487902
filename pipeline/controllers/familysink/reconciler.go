package familysink

import (
	"context"
	"fmt"
	"strings"

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

// Reconciler reconciles one family sink kind.
type Reconciler struct {
	Client  client.Client
	Metrics *controllers.Metrics
	name    string
	newObj  func() (client.Object, func() sinkObject)
}

// SetupDatabaseSinks registers the KollectDatabaseSink reconciler.
func SetupDatabaseSinks(mgr ctrl.Manager, m *controllers.Metrics) error {
	r := &Reconciler{Client: mgr.GetClient(), Metrics: m, name: "kollectdatabasesink", newObj: func() (client.Object, func() sinkObject) {
		o := &databaseSink{}
		return &o.KollectDatabaseSink, func() sinkObject { return o }
	}}
	return ctrl.NewControllerManagedBy(mgr).Named(r.name).For(&kollectv1alpha1.KollectDatabaseSink{}, builder.WithPredicates(controllers.SpecOrAnnotationsChanged())).Complete(m.Instrument(r.name, r))
}

// SetupEventSinks registers the KollectEventSink reconciler.
func SetupEventSinks(mgr ctrl.Manager, m *controllers.Metrics) error {
	r := &Reconciler{Client: mgr.GetClient(), Metrics: m, name: "kollecteventsink", newObj: func() (client.Object, func() sinkObject) {
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
	typ, common, st := obj.common()
	forced := strings.EqualFold(strings.TrimSpace(raw.GetAnnotations()[snapshotsink.TestConnectionAnnotation]), "true")
	if common.ConnectionTest != nil && !*common.ConnectionTest && !forced {
		return reconcile.Result{}, nil
	}
	base := raw.DeepCopyObject().(client.Object)
	msg := fmt.Sprintf("%s sinks are not implemented in this version of Kollect; inventories bound to this sink report their exports as failed", typ)
	for _, c := range []string{snapshotsink.TypeConnectionVerified, snapshotsink.TypeDegraded} {
		status := metav1.ConditionFalse
		if c == snapshotsink.TypeDegraded {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: c, Status: status, Reason: snapshotsink.ReasonTestFailed,
			Message: msg, ObservedGeneration: raw.GetGeneration()})
	}
	st.ObservedGeneration = raw.GetGeneration()
	return reconcile.Result{}, r.Client.Status().Patch(ctx, raw, client.MergeFrom(base))
}
