package status

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// degradedGauge is kollect_degraded{kind,namespace,name,reason}: 1 for
// each target or inventory whose Degraded condition is True.
func newDegradedGauge() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kollect_degraded",
		Help: "1 for each target or inventory that is Degraded, labelled with the reason."},
		[]string{"kind", "namespace", "name", "reason"})
}

// newCollectedGauge is upstream's kollect_collected_objects{profile,gvk}:
// rows per profile and kind, summed over the targets that use them.
func newCollectedGauge() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kollect_collected_objects",
		Help: "Rows collected, by the targets' profileRef and group/version/kind (summed over targets sharing both)."},
		[]string{"profile", "gvk"})
}

// GVKLabel writes a kind as kollect_collected_objects labels it:
// group/version/kind, or version/kind for the core group.
func GVKLabel(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Version + "/" + gvk.Kind
	}
	return gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
}

// collectedSeries is one target's contribution to kollect_collected_objects.
type collectedSeries struct {
	profile, gvk string
	count        int64
}

// RegisterMetrics publishes the writer's series with reg.
func (w *Writer) RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{w.degraded, w.collected, w.series, w.series.capped, w.shardWarns} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// countCollected records a target's row count under its profile and kind
// and publishes the sums it changes. The caller holds w.mu.
func (w *Writer) countCollected(key Key, profile, gvk string, count int64) {
	old, had := w.collectedBy[key]
	next := collectedSeries{profile: profile, gvk: gvk, count: count}
	if had && old == next {
		return
	}
	if had {
		w.addCollected(old.profile, old.gvk, -old.count, -1)
	}
	w.collectedBy[key] = next
	w.addCollected(profile, gvk, count, 1)
}

// addCollected moves one (profile, gvk) sum and its number of targets, and
// publishes it (removing the series when no target is left): constant
// work per report, whatever the number of targets.
func (w *Writer) addCollected(profile, gvk string, rows int64, targets int) {
	k := [2]string{profile, gvk}
	sum := w.collectedSum[k]
	sum.rows += rows
	sum.targets += targets
	if sum.targets == 0 {
		delete(w.collectedSum, k)
		w.collected.DeleteLabelValues(profile, gvk)
		return
	}
	w.collectedSum[k] = sum
	w.collected.WithLabelValues(profile, gvk).Set(float64(sum.rows))
}

// collectedTotal is one (profile, gvk) sum and how many targets make it.
type collectedTotal struct {
	rows    int64
	targets int
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
	w.series.forget(key)
	if c, ok := w.collectedBy[key]; ok {
		delete(w.collectedBy, key)
		w.addCollected(c.profile, c.gvk, -c.count, -1)
	}
	if old, ok := w.degradedReason[key]; ok {
		w.degraded.DeleteLabelValues(string(key.Kind), key.Namespace, key.Name, old)
		delete(w.degradedReason, key)
	}
}
