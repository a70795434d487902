package controllers

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Metrics are the reconcile series of the upstream catalogue.
type Metrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight *prometheus.GaugeVec
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
	}
	reg.MustRegister(m.total, m.duration, m.inFlight)
	return m
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
		}
		m.total.WithLabelValues(controller, result).Inc()
		return res, err
	})
}
