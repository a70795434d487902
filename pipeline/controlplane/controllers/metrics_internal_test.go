package controllers

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kollect.dev/kollect/sinks"
)

// A failed reconcile counts in kollect_reconcile_errors_total under its
// kind and upstream's error class.
func TestReconcileErrorsAreClassified(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	cases := []struct {
		err   error
		class string
	}{
		{apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "x", errors.New("no")), "forbidden"},
		{sinks.Permanent(errors.New("bad layout")), "terminal"},
		{apierrors.NewBadRequest("no"), "terminal"},
		{errors.New("connection reset"), "transient"},
	}
	for _, c := range cases {
		r := m.Instrument("kollectinventory", reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, c.err }))
		_, _ = r.Reconcile(context.Background(), reconcile.Request{})
	}
	for class, want := range map[string]float64{"forbidden": 1, "terminal": 2, "transient": 1} {
		if got := testutil.ToFloat64(m.errs.WithLabelValues("KollectInventory", class)); got != want {
			t.Errorf("%s: %v errors, want %v", class, got, want)
		}
	}
	ok := m.Instrument("kollecttarget", reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil }))
	_, _ = ok.Reconcile(context.Background(), reconcile.Request{})
	if n := testutil.CollectAndCount(m.errs); n != 3 {
		t.Errorf("%d error series, want 3 (a success counts none)", n)
	}
}
