package controllers

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"kollect.dev/kollect/pipeline/status"
)

// StatusSource is what a status controller reads engine reports from and
// writes status through (status.Writer).
type StatusSource interface {
	Source(kind status.Kind) source.Source
	Refresh(ctx context.Context, key status.Key) error
}

// StatusController runs, beside a kind's reconciler, the controller that
// turns engine reports into status patches: each report about an object
// (an export acknowledged, a count) merges with the reconciler's last
// verdict. Reports are frequent, a reconcile is not cheap (it reads
// sinks, Secrets and scopes, and compiles profiles), so a report never
// reconciles: a thousand busy inventories cost status patches, not
// Secret reads.
func StatusController(mgr ctrl.Manager, name string, kind status.Kind, w StatusSource, t Tuning) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(name + "-status").
		WatchesRawSource(w.Source(kind)).
		WithOptions(t.Options()).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, w.Refresh(ctx, status.Key{Kind: kind, NamespacedName: req.NamespacedName})
		}))
}
