package status

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// Condition types and reasons used for targets.
const (
	TypeReady    = "Ready"
	TypeSynced   = "Synced"
	TypeDegraded = "Degraded"

	ReasonCollecting       = "Collecting"
	ReasonExtractionFailed = "ExtractionFailed"
	// ReasonScopeForbidden: the target collects, but the operator may not
	// list some of the namespaces it reads (Synced, with Ready).
	ReasonScopeForbidden = "ScopeForbidden"
)

// targetView is what one status write of a target needs.
type targetView struct {
	v        Verdict
	reported bool // a report of the verdict's generation exists
	count    int64
	since    time.Time
	failures int
	lastErr  string
}

func (w *Writer) targetView(key Key) (targetView, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.targets[key]
	if st == nil || st.verdict == nil {
		return targetView{}, false // nothing to say until the reconciler has spoken
	}
	tv := targetView{v: *st.verdict}
	if r := st.report; r != nil && r.Generation == tv.v.Generation {
		if !st.hasCount || st.lastCount != int64(r.Count) {
			st.lastCount, st.hasCount, st.countSince = int64(r.Count), true, w.now()
		}
		tv.reported, tv.failures, tv.lastErr = true, r.ExtractionFailures, r.LastExtractionError
		if tv.v.Profile != "" && !tv.v.Degraded() {
			w.countCollected(key, tv.v.Profile, tv.v.GVK, int64(r.Count))
		}
	}
	tv.count, tv.since = st.lastCount, st.countSince
	return tv, true
}

// conditions sets Ready/Synced/Degraded; false means wait for a report.
func (tv targetView) conditions(conds *[]metav1.Condition) bool {
	v := tv.v
	reason, msg := v.Reason, v.Message
	if reason == "" && tv.reported && tv.failures > 0 {
		reason = ReasonExtractionFailed
		msg = fmt.Sprintf("%d object(s) fail required attributes; latest: %s", tv.failures, tv.lastErr)
	}
	switch {
	case reason != "":
		setCondition(conds, TypeDegraded, metav1.ConditionTrue, reason, msg, v.Generation)
		meta.RemoveStatusCondition(conds, TypeReady)
		meta.RemoveStatusCondition(conds, TypeSynced)
	case !tv.reported:
		return false
	default:
		meta.RemoveStatusCondition(conds, TypeDegraded)
		setCondition(conds, TypeReady, metav1.ConditionTrue, ReasonCollecting,
			fmt.Sprintf("%s; collecting %d resource(s)", v.Detail, tv.count), v.Generation)
		if v.Forbidden != "" {
			setCondition(conds, TypeSynced, metav1.ConditionTrue, ReasonScopeForbidden,
				fmt.Sprintf("collecting %d resource(s); %s", tv.count, v.Forbidden), v.Generation)
		} else {
			setCondition(conds, TypeSynced, metav1.ConditionTrue, ReasonCollecting,
				fmt.Sprintf("collecting %d resource(s)", tv.count), v.Generation)
		}
	}
	return true
}

func (w *Writer) writeTarget(ctx context.Context, key Key) error {
	tv, ok := w.targetView(key)
	if !ok {
		return nil
	}
	filter := kollectv1alpha1.CollectionFilterStatus{
		MatchedNamespaces: firstListed(tv.v.Matched), MatchedNamespaceCount: len(tv.v.Matched),
		EffectiveNamespaces: firstListed(tv.v.Effective), EffectiveNamespaceCount: len(tv.v.Effective),
		ActiveResourceRules: tv.v.Rules}
	if key.Kind == ClusterTarget {
		var t kollectv1alpha1.KollectClusterTarget
		if err := w.c.Get(ctx, key.NamespacedName, &t); err != nil {
			return err
		}
		base := t.DeepCopy()
		s := &t.Status
		s.ObservedGeneration, s.CollectionFilterStatus = tv.v.Generation, filter
		if tv.reported {
			s.CollectedCount = &tv.count
		}
		if !tv.conditions(&s.Conditions) {
			return nil
		}
		w.observe(key, s.Conditions)
		if err := Patch(ctx, w.c, &t, base); err != nil {
			return err
		}
		w.announceTransitions(&t, base.Status.Conditions, s.Conditions)
		return nil
	}
	var t kollectv1alpha1.KollectTarget
	if err := w.c.Get(ctx, key.NamespacedName, &t); err != nil {
		return err
	}
	base := t.DeepCopy()
	s := &t.Status
	s.ObservedGeneration, s.CollectionFilterStatus = tv.v.Generation, filter
	if tv.reported {
		// The time says when the count last changed: a count the status
		// already holds keeps its time (a restarted manager counts the
		// same objects anew, and that is no change).
		if s.CollectedCount == nil || *s.CollectedCount != tv.count || s.CollectedCountUpdatedAt == nil {
			ts := metav1.NewTime(tv.since)
			s.CollectedCountUpdatedAt = &ts
		}
		s.CollectedCount = &tv.count
		s.ExtractionFailures, s.LastExtractionError = tv.failures, tv.lastErr
	}
	if !tv.conditions(&s.Conditions) {
		return nil
	}
	w.observe(key, s.Conditions)
	if err := Patch(ctx, w.c, &t, base); err != nil {
		return err
	}
	w.announceTransitions(&t, base.Status.Conditions, s.Conditions)
	return nil
}

func setCondition(conds *[]metav1.Condition, typ string, status metav1.ConditionStatus, reason, msg string, gen int64) {
	if len(msg) > 32768 {
		msg = msg[:32768]
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
}

// ListedNamespaces is how many namespaces a target's status lists at most
// (the CRD's MaxItems): 256 names of up to 63 characters keep both lists
// within 32 KiB, where a full list reached the API server's object limit
// at about 35,000 namespaces and every later status patch failed.
const ListedNamespaces = 256

// firstListed is the first ListedNamespaces of a sorted list.
func firstListed(names []string) []string {
	if len(names) > ListedNamespaces {
		return names[:ListedNamespaces]
	}
	return names
}
