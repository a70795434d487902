package status

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// degradedGauge is kollect_degraded{kind,namespace,name,reason}: 1 for
// each target or inventory whose Degraded condition is True.
func newDegradedGauge() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kollect_degraded",
		Help: "1 for each target or inventory that is Degraded, labelled with the reason."},
		[]string{"kind", "namespace", "name", "reason"})
}

// RegisterMetrics publishes the writer's series with reg.
func (w *Writer) RegisterMetrics(reg prometheus.Registerer) error {
	return reg.Register(w.degraded)
}

// observe records whether the object's status, as about to be written, is
// Degraded. Only a change of reason touches the series.
func (w *Writer) observe(key Key, conds []metav1.Condition) {
	reason := ""
	if c := meta.FindStatusCondition(conds, TypeDegraded); c != nil && c.Status == metav1.ConditionTrue {
		reason = c.Reason
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	old, had := w.degradedReason[key]
	if had && old == reason {
		return
	}
	if had {
		w.degraded.DeleteLabelValues(string(key.Kind), key.Namespace, key.Name, old)
		delete(w.degradedReason, key)
	}
	if reason != "" {
		w.degraded.WithLabelValues(string(key.Kind), key.Namespace, key.Name, reason).Set(1)
		w.degradedReason[key] = reason
	}
}

// forgetMetrics drops a gone object's series; the caller holds w.mu.
func (w *Writer) forgetMetrics(key Key) {
	if old, ok := w.degradedReason[key]; ok {
		w.degraded.DeleteLabelValues(string(key.Kind), key.Namespace, key.Name, old)
		delete(w.degradedReason, key)
	}
}
