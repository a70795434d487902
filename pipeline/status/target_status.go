package status

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// Condition types and reasons used for targets.
const (
	TypeReady    = "Ready"
	TypeSynced   = "Synced"
	TypeDegraded = "Degraded"

	ReasonCollecting       = "Collecting"
	ReasonExtractionFailed = "ExtractionFailed"
)

func (w *Writer) writeTarget(ctx context.Context, key types.NamespacedName) error {
	w.mu.Lock()
	st := w.targets[key]
	if st == nil || st.verdict == nil {
		w.mu.Unlock()
		return nil // nothing to say until the reconciler has spoken
	}
	v := *st.verdict
	var rep *struct {
		count, failures int
		lastErr         string
	}
	if st.report != nil && st.report.Generation == v.Generation {
		rep = &struct {
			count, failures int
			lastErr         string
		}{st.report.Count, st.report.ExtractionFailures, st.report.LastExtractionError}
	}
	if rep != nil && (!st.hasCount || st.lastCount != int64(rep.count)) {
		st.lastCount, st.hasCount, st.countSince = int64(rep.count), true, w.now()
	}
	count, hasCount, since := st.lastCount, st.hasCount, st.countSince
	w.mu.Unlock()

	var t kollectv1alpha1.KollectTarget
	if err := w.c.Get(ctx, key, &t); err != nil {
		return err
	}
	base := t.DeepCopy()
	s := &t.Status
	s.ObservedGeneration = v.Generation
	s.MatchedNamespaces, s.EffectiveNamespaces, s.ActiveResourceRules = v.Matched, v.Effective, v.Rules
	if hasCount && rep != nil {
		s.CollectedCount = &count
		ts := metav1.NewTime(since)
		if s.CollectedCountUpdatedAt == nil || !s.CollectedCountUpdatedAt.Equal(&ts) {
			s.CollectedCountUpdatedAt = &ts
		}
	}
	if rep != nil {
		s.ExtractionFailures, s.LastExtractionError = rep.failures, rep.lastErr
	}
	reason, msg := v.Reason, v.Message
	if reason == "" && rep != nil && rep.failures > 0 {
		reason = ReasonExtractionFailed
		msg = fmt.Sprintf("%d object(s) fail required attributes; latest: %s", rep.failures, rep.lastErr)
	}
	switch {
	case reason != "":
		setCondition(&s.Conditions, TypeDegraded, metav1.ConditionTrue, reason, msg, v.Generation)
		meta.RemoveStatusCondition(&s.Conditions, TypeReady)
		meta.RemoveStatusCondition(&s.Conditions, TypeSynced)
	case rep == nil:
		return nil // wait for the first report of this generation
	default:
		meta.RemoveStatusCondition(&s.Conditions, TypeDegraded)
		setCondition(&s.Conditions, TypeReady, metav1.ConditionTrue, ReasonCollecting,
			fmt.Sprintf("profileRef %q resolved; collecting %d resource(s)", v.Detail, rep.count), v.Generation)
		setCondition(&s.Conditions, TypeSynced, metav1.ConditionTrue, ReasonCollecting,
			fmt.Sprintf("collecting %d resource(s)", rep.count), v.Generation)
	}
	return w.c.Status().Patch(ctx, &t, client.MergeFrom(base))
}

func setCondition(conds *[]metav1.Condition, typ string, status metav1.ConditionStatus, reason, msg string, gen int64) {
	if len(msg) > 32768 {
		msg = msg[:32768]
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
}
