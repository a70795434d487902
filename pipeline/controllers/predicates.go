package controllers

import (
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// SpecChanged lets through what a reconciler acts on: creation, spec
// changes (generation), deletion. It filters out status writes, so the
// status writer's own patches do not re-run reconciles.
func SpecChanged() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return !e.ObjectNew.GetDeletionTimestamp().IsZero() },
	})
}

// SpecOrAnnotationsChanged also lets annotation changes through (sinks read
// kollect.dev/test-connection).
func SpecOrAnnotationsChanged() predicate.Predicate {
	return predicate.Or(SpecChanged(), predicate.AnnotationChangedPredicate{})
}
