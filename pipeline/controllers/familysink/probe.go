package familysink

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/status"
)

// Annotation that forces a probe even when spec.connectionTest is false.
const TestConnectionAnnotation = "kollect.dev/test-connection"

// Condition types and reasons.
const (
	TypeConnectionVerified = "ConnectionVerified"
	TypeDegraded           = "Degraded"
	TypeTLSInsecure        = "TLSInsecure"
	ReasonConnectionOK     = "ConnectionOK"
)

// Probe is the outcome of a connection probe: OK is the ConnectionVerified
// message on success; Reason and Err say why it failed.
type Probe struct {
	OK     string
	Reason string
	Err    error
}

// RecordProbe writes a probe's outcome into a sink's status
// (ConnectionVerified, Degraded, TLSInsecure), retries a failed probe after
// retryAfter, and drops the one-off test-connection annotation once it
// succeeded (oneOff: the sink asked for no regular probes). Every sink kind
// records its probes through it.
func RecordProbe(ctx context.Context, c client.Client, obj client.Object, conds *[]metav1.Condition, observed *int64,
	tls *kollectv1alpha1.TLSSpec, oneOff bool, p Probe, retryAfter time.Duration, rec events.EventRecorder) (reconcile.Result, error) {
	base := obj.DeepCopyObject().(client.Object)
	before := append([]metav1.Condition(nil), *conds...)
	gen := obj.GetGeneration()
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	if p.Err != nil {
		set(TypeConnectionVerified, metav1.ConditionFalse, p.Reason, p.Err.Error())
		set(TypeDegraded, metav1.ConditionTrue, p.Reason, p.Err.Error())
	} else {
		set(TypeConnectionVerified, metav1.ConditionTrue, ReasonConnectionOK, p.OK)
		meta.RemoveStatusCondition(conds, TypeDegraded)
	}
	if p.Err == nil && tls != nil && tls.InsecureSkipVerify {
		set(TypeTLSInsecure, metav1.ConditionTrue, "InsecureSkipVerify", "server certificates are not verified")
	} else {
		meta.RemoveStatusCondition(conds, TypeTLSInsecure)
	}
	*observed = gen
	if err := status.Patch(ctx, c, obj, base); err != nil {
		return reconcile.Result{}, err
	}
	announceProbe(rec, obj, before, *conds)
	if p.Err != nil {
		return reconcile.Result{RequeueAfter: retryAfter}, nil
	}
	if oneOff {
		// A one-off probe that succeeded: drop the request, as upstream does.
		patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
		ann := obj.GetAnnotations()
		delete(ann, TestConnectionAnnotation)
		obj.SetAnnotations(ann)
		return reconcile.Result{}, c.Patch(ctx, obj, patch)
	}
	return reconcile.Result{}, nil
}

// announceProbe records an event when a probe's outcome changes: a
// Warning when the sink stops being reachable (or fails for another
// reason), a Normal event when it is reachable again.
func announceProbe(rec events.EventRecorder, obj client.Object, before, after []metav1.Condition) {
	if rec == nil {
		return
	}
	was, now := meta.FindStatusCondition(before, TypeConnectionVerified), meta.FindStatusCondition(after, TypeConnectionVerified)
	switch {
	case now == nil:
	case now.Status == metav1.ConditionFalse && (was == nil || was.Status != metav1.ConditionFalse || was.Reason != now.Reason):
		rec.Eventf(obj, nil, corev1.EventTypeWarning, now.Reason, "Probe", "%s", now.Message)
	case now.Status == metav1.ConditionTrue && was != nil && was.Status == metav1.ConditionFalse:
		rec.Eventf(obj, nil, corev1.EventTypeNormal, ReasonConnectionOK, "Probe", "%s", now.Message)
	}
}
