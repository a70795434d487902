package controllers

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Tuning is how a reconciler's workqueue runs: concurrent reconciles, and
// the first delay of the per-object back-off after a failed reconcile (0
// keeps controller-runtime's default).
type Tuning struct {
	Concurrency int
	RateLimit   time.Duration
}

// Options turns a tuning into controller options.
func (t Tuning) Options() controller.Options {
	o := controller.Options{MaxConcurrentReconciles: max(1, t.Concurrency)}
	if t.RateLimit > 0 {
		o.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](t.RateLimit, 1000*time.Second)
	}
	return o
}
