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
// Degraded.
func (w *Writer) observe(key Key, conds []metav1.Condition) {
	labels := prometheus.Labels{"kind": string(key.Kind), "namespace": key.Namespace, "name": key.Name}
	w.degraded.DeletePartialMatch(labels)
	if c := meta.FindStatusCondition(conds, TypeDegraded); c != nil && c.Status == metav1.ConditionTrue {
		labels["reason"] = c.Reason
		w.degraded.With(labels).Set(1)
	}
}

func (w *Writer) forgetMetrics(key Key) {
	w.degraded.DeletePartialMatch(prometheus.Labels{"kind": string(key.Kind), "namespace": key.Namespace, "name": key.Name})
}
