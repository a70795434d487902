package informers

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Metrics are the informer series of upstream's metric catalogue. A nil
// *Metrics records nothing.
type Metrics struct {
	objectCount *prometheus.GaugeVec
	clusterWide *prometheus.GaugeVec
	resyncs     *prometheus.CounterVec
}

// NewMetrics registers the informer series with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		objectCount: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kollect_informer_objects", Help: "Objects in each collection informer's cache.",
		}, []string{"group", "version", "resource"}),
		clusterWide: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kollect_informer_cluster_wide_scope", Help: "1 if the informer watches every namespace at once, 0 if it watches the namespaces its targets name, one by one.",
		}, []string{"group", "version", "resource"}),
		resyncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kollect_informer_resync_dispatches_total",
			Help: "Update events a periodic informer resync delivered (the cached object again, unchanged).",
		}, []string{"group", "version", "resource"}),
	}
	reg.MustRegister(m.objectCount, m.clusterWide, m.resyncs)
	return m
}

func (m *Metrics) objects(gvr schema.GroupVersionResource, n int) {
	if m != nil {
		m.objectCount.WithLabelValues(gvr.Group, gvr.Version, gvr.Resource).Set(float64(n))
	}
}

func (m *Metrics) scope(gvr schema.GroupVersionResource, clusterWide bool) {
	if m == nil {
		return
	}
	v := 0.0
	if clusterWide {
		v = 1
	}
	m.clusterWide.WithLabelValues(gvr.Group, gvr.Version, gvr.Resource).Set(v)
}

func (m *Metrics) resynced(gvr schema.GroupVersionResource) {
	if m != nil {
		m.resyncs.WithLabelValues(gvr.Group, gvr.Version, gvr.Resource).Inc()
	}
}

func (m *Metrics) forget(gvr schema.GroupVersionResource) {
	if m != nil {
		m.objectCount.DeleteLabelValues(gvr.Group, gvr.Version, gvr.Resource)
		m.clusterWide.DeleteLabelValues(gvr.Group, gvr.Version, gvr.Resource)
		m.resyncs.DeleteLabelValues(gvr.Group, gvr.Version, gvr.Resource)
	}
}
