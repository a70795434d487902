package status

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ReasonRecovered is the reason of the Normal event recorded when an object
// stops being Degraded.
const ReasonRecovered = "Recovered"

// announceTransitions records the condition changes a user acts on, once
// per change as the status patch that carries them lands: a Warning when
// the object becomes Degraded or its Degraded reason changes (a scope
// violation, a sink that cannot be reached, a cleanup that cannot finish),
// and a Normal event when it recovers.
func (w *Writer) announceTransitions(obj runtime.Object, before, after []metav1.Condition) {
	if w.Events == nil {
		return
	}
	was := meta.FindStatusCondition(before, TypeDegraded)
	now := meta.FindStatusCondition(after, TypeDegraded)
	wasDegraded := was != nil && was.Status == metav1.ConditionTrue
	isDegraded := now != nil && now.Status == metav1.ConditionTrue
	switch {
	case isDegraded && (!wasDegraded || was.Reason != now.Reason):
		w.Events.Eventf(obj, nil, corev1.EventTypeWarning, now.Reason, "Degrade", "%s", now.Message)
	case wasDegraded && !isDegraded:
		w.Events.Eventf(obj, nil, corev1.EventTypeNormal, ReasonRecovered, "Recover", "no longer degraded (was %s: %s)", was.Reason, was.Message)
	}
}
