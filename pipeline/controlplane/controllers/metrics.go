package controllers

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kollect.dev/kollect/sinks"
)

// Metrics are the reconcile and probe series of the upstream catalogue
// (OPERATIONS §3).
type Metrics struct {
	total     *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	inFlight  *prometheus.GaugeVec
	errs      *prometheus.CounterVec
	connTests *prometheus.CounterVec
}

// NewMetrics registers the reconcile series with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_reconcile_total",
			Help: "Reconcile attempts by controller and result."}, []string{"controller", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kollect_reconcile_duration_seconds",
			Help: "Reconcile latency.", Buckets: prometheus.DefBuckets}, []string{"controller"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kollect_workqueue_depth",
			Help: "Reconciles in flight."}, []string{"controller"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_reconcile_errors_total",
			Help: "Failed reconciles by kind and class: forbidden (RBAC), terminal (retrying cannot help), transient."}, []string{"kind", "error_class"}),
		connTests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_sink_connection_test_total",
			Help: "Sink connection probes by sink type and result."}, []string{"type", "result"}),
	}
	reg.MustRegister(m.total, m.duration, m.inFlight, m.errs, m.connTests)
	return m
}

// kinds maps controller names to the kinds they reconcile.
var kinds = map[string]string{
	"kollecttarget": "KollectTarget", "kollectclustertarget": "KollectClusterTarget",
	"kollectinventory": "KollectInventory", "kollectclusterinventory": "KollectClusterInventory",
	"kollectsnapshotsink": "KollectSnapshotSink", "kollectdatabasesink": "KollectDatabaseSink",
	"kollecteventsink": "KollectEventSink", "kollectconnectiontest": "KollectConnectionTest",
}

// errorClass sorts a reconcile error as upstream does.
func errorClass(err error) string {
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return "forbidden"
	case errors.Is(err, sinks.ErrPermanent) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return "terminal"
	}
	return "transient"
}

// ConnectionTest counts one sink probe.
func (m *Metrics) ConnectionTest(sinkType string, ok bool) {
	if m == nil {
		return
	}
	result := "success"
	if !ok {
		result = "failure"
	}
	m.connTests.WithLabelValues(sinkType, result).Inc()
}

// Instrument wraps a reconciler with the reconcile series.
func (m *Metrics) Instrument(controller string, r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		g := m.inFlight.WithLabelValues(controller)
		g.Inc()
		defer g.Dec()
		start := time.Now()
		res, err := r.Reconcile(ctx, req)
		m.duration.WithLabelValues(controller).Observe(time.Since(start).Seconds())
		result := "success"
		if err != nil {
			result = "failure"
			kind := kinds[controller]
			if kind == "" {
				kind = controller
			}
			m.errs.WithLabelValues(kind, errorClass(err)).Inc()
		}
		m.total.WithLabelValues(controller, result).Inc()
		return res, err
	})
}
