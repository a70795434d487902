package controllers

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kollect.dev/kollect/sinks"
)

// Metrics are the reconcile and probe series of the upstream catalogue.
type Metrics struct {
	clock     clock.PassiveClock // times each reconcile
	total     *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	inFlight  *prometheus.GaugeVec
	errs      *prometheus.CounterVec
	connTests *prometheus.CounterVec
	refs      *prometheus.CounterVec
	mapErrs   *prometheus.CounterVec
	readBack  *prometheus.CounterVec
	access    *prometheus.CounterVec
}

// NewMetrics registers the reconcile series with reg.
func NewMetrics(reg prometheus.Registerer, clk clock.PassiveClock) *Metrics {
	m := &Metrics{
		clock: clk,
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
	m.refs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_static_ref_resolution_total",
		Help: "Resolutions of profile and sink references by kind, reference type and result (ok, not_found, forbidden)."}, []string{"kind", "ref_type", "result"})
	m.mapErrs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_watch_map_list_errors_total",
		Help: "Failed lists inside watch mappings (a changed object whose dependents could not be found)."}, []string{"controller", "watch"})
	// Access reviews are asked per resource and namespace when an informer
	// spans namespaces (not per object, as upstream's were). Upstream's
	// namespace fingerprint cache has no counterpart (actors keep rows
	// instead of fingerprints): its series exists, at 0, so upstream's
	// dashboards and queries resolve.
	m.access = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_access_cache_total",
		Help: "SelfSubjectAccessReview answers (list and watch of a resource in a namespace) taken from the cache (hit) or asked (miss)."}, []string{"result"})
	fingerprints := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_namespace_fingerprint_cache_total",
		Help: "Upstream's namespace fingerprint cache use; always 0: inventory actors keep their rows and need none."}, []string{"controller", "result"})
	for _, result := range []string{"hit", "miss"} {
		m.access.WithLabelValues(result)
		for _, c := range []string{"kollectinventory", "kollectclusterinventory"} {
			fingerprints.WithLabelValues(c, result)
		}
	}
	m.readBack = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_sink_read_back_bytes_total",
		Help: "Bytes sinks read back from their servers to learn what they hold (a Kafka topic after a start), by sink type."}, []string{"type"})
	reg.MustRegister(m.total, m.duration, m.inFlight, m.errs, m.connTests, m.refs, m.mapErrs, m.readBack, m.access, fingerprints)
	return m
}

// AccessCache counts one access question, answered from the cache (hit)
// or asked of the API server.
func (m *Metrics) AccessCache(hit bool) {
	if m == nil {
		return
	}
	if hit {
		m.access.WithLabelValues("hit").Inc()
	} else {
		m.access.WithLabelValues("miss").Inc()
	}
}

// ReadBack counts bytes a sink of sinkType read back from its server.
func (m *Metrics) ReadBack(sinkType string, bytes int) {
	if m != nil {
		m.readBack.WithLabelValues(sinkType).Add(float64(bytes))
	}
}

// RefResolved counts the resolution of a reference of refType (profile,
// snapshot, database, event) by kind; errors other than NotFound and
// Forbidden (a transient read) are not a result and are not counted.
func (m *Metrics) RefResolved(kind, refType string, err error) {
	if m == nil {
		return
	}
	result := "ok"
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		result = "not_found"
	case apierrors.IsForbidden(err):
		result = "forbidden"
	default:
		return
	}
	m.refs.WithLabelValues(kind, refType, result).Inc()
}

// MapListFailed counts a failed list inside controller's watch mapping.
func (m *Metrics) MapListFailed(controller, watch string) {
	if m == nil {
		return
	}
	m.mapErrs.WithLabelValues(controller, watch).Inc()
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
		start := m.clock.Now()
		res, err := r.Reconcile(ctx, req)
		m.duration.WithLabelValues(controller).Observe(m.clock.Since(start).Seconds())
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
