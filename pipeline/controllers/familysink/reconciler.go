package familysink

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/backends"
	"kollect.dev/kollect/pipeline/controllers"
)

// sinkObject is a sink of any family: its common fields and status.
type sinkObject interface {
	client.Object
	common() (*kollectv1alpha1.SinkCommonFields, *kollectv1alpha1.FamilySinkStatus)
}

type snapshotSink struct {
	kollectv1alpha1.KollectSnapshotSink
}

func (s *snapshotSink) common() (*kollectv1alpha1.SinkCommonFields, *kollectv1alpha1.FamilySinkStatus) {
	return &s.Spec.SinkCommonFields, &s.Status
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

// Prober tests a sink's connection: the backends registry.
type Prober interface {
	Probe(ctx context.Context, c client.Reader, sink client.Object) (msg, reason string, err error)
}

// Reconciler reconciles one sink kind; Setup registers one per family.
type Reconciler struct {
	Client  client.Client
	Prober  Prober
	Metrics *controllers.Metrics
	// RetryAfter is the delay before a failed probe is tried again.
	RetryAfter time.Duration
	// Events records probe failures and recoveries.
	Events events.EventRecorder
	// New returns an empty object of the kind and its view as a sinkObject.
	New func() (client.Object, sinkObject)
	// Clock stamps previews (nil: the real clock).
	Clock clock.PassiveClock
}

// family is one sink kind as Setup registers it.
type family struct {
	name string
	obj  client.Object
	list client.ObjectList
	new  func() (client.Object, sinkObject)
}

func families() []family {
	return []family{
		{"kollectsnapshotsink", &kollectv1alpha1.KollectSnapshotSink{}, &kollectv1alpha1.KollectSnapshotSinkList{}, func() (client.Object, sinkObject) {
			o := &snapshotSink{}
			return &o.KollectSnapshotSink, o
		}},
		{"kollectdatabasesink", &kollectv1alpha1.KollectDatabaseSink{}, &kollectv1alpha1.KollectDatabaseSinkList{}, func() (client.Object, sinkObject) {
			o := &databaseSink{}
			return &o.KollectDatabaseSink, o
		}},
		{"kollecteventsink", &kollectv1alpha1.KollectEventSink{}, &kollectv1alpha1.KollectEventSinkList{}, func() (client.Object, sinkObject) {
			o := &eventSink{}
			return &o.KollectEventSink, o
		}},
	}
}

// Setup registers the reconciler of each sink kind. A scope change
// re-checks the sinks of its namespace (the Secrets they may read).
func Setup(mgr ctrl.Manager, p Prober, m *controllers.Metrics, rec events.EventRecorder, clk clock.PassiveClock) error {
	for _, f := range families() {
		r := &Reconciler{Client: mgr.GetClient(), Prober: p, Metrics: m, RetryAfter: time.Minute, Events: rec, New: f.new, Clock: clk}
		err := ctrl.NewControllerManagedBy(mgr).Named(f.name).
			For(f.obj, builder.WithPredicates(controllers.SpecOrAnnotationsChanged())).
			Watches(&kollectv1alpha1.KollectScope{}, m.AllIn(f.name, r.Client, f.list)).
			Complete(m.Instrument(f.name, r))
		if err != nil {
			return fmt.Errorf("set up %s controller: %w", f.name, err)
		}
	}
	return nil
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	raw, obj := r.New()
	if err := r.Client.Get(ctx, req.NamespacedName, raw); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	common, st := obj.common()
	if err := ApplyPreview(ctx, r.Client, raw, st, r.now()); err != nil {
		return reconcile.Result{}, err
	}
	forced := strings.EqualFold(strings.TrimSpace(raw.GetAnnotations()[TestConnectionAnnotation]), "true")
	enabled := common.ConnectionTest == nil || *common.ConnectionTest
	if !enabled && !forced {
		return reconcile.Result{}, nil
	}
	okMsg, reason, probeErr := r.Prober.Probe(ctx, r.Client, raw)
	_, typ := backends.Kind(raw)
	r.Metrics.ConnectionTest(typ, probeErr == nil)
	return RecordProbe(ctx, r.Client, raw, &st.Conditions, &st.ObservedGeneration, common.TLS, forced && !enabled,
		Probe{OK: okMsg, Reason: reason, Err: probeErr}, r.RetryAfter, r.Events)
}

// now is the time by the reconciler's clock.
func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return clock.RealClock{}.Now()
	}
	return r.Clock.Now()
}
