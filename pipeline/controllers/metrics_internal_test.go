package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/sinks"
)

// A failed reconcile counts in kollect_reconcile_errors_total under its
// kind and upstream's error class.
func TestReconcileErrorsAreClassified(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry(), clock.RealClock{})
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

// A reference resolution counts under upstream's results; a transient read
// error is no result.
func TestReferenceResolutionsAreCounted(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry(), clock.RealClock{})
	gr := schema.GroupResource{Group: "kollect.dev", Resource: "kollectprofiles"}
	for _, err := range []error{nil, nil, apierrors.NewNotFound(gr, "p"), apierrors.NewForbidden(gr, "p", errors.New("no")), errors.New("timeout")} {
		m.RefResolved("KollectTarget", "profile", err)
	}
	for result, want := range map[string]float64{"ok": 2, "not_found": 1, "forbidden": 1} {
		if got := testutil.ToFloat64(m.refs.WithLabelValues("KollectTarget", "profile", result)); got != want {
			t.Errorf("result %s: %v, want %v", result, got, want)
		}
	}
	if n := testutil.CollectAndCount(m.refs); n != 3 {
		t.Errorf("%d series, want 3 (a transient error is not a result)", n)
	}
}

// A watch mapping whose list fails enqueues nothing and is counted under
// the controller and the watched kind.
func TestFailedWatchListsAreCounted(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry(), clock.RealClock{})
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("the cache is not started")
		}}).Build()
	scope := &kollectv1alpha1.KollectScope{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s"}}
	if reqs := m.listIn(context.Background(), "kollectinventory", c, &kollectv1alpha1.KollectInventoryList{}, scope, "team"); reqs != nil {
		t.Fatalf("a failed list enqueued %v", reqs)
	}
	if got := testutil.ToFloat64(m.mapErrs.WithLabelValues("kollectinventory", "KollectScope")); got != 1 {
		t.Errorf("kollect_watch_map_list_errors_total{kollectinventory,KollectScope} = %v, want 1", got)
	}
}

// A reconcile's duration is read from the manager's clock: what the clock
// moved while the reconciler ran is what the histogram holds.
func TestReconcileDurationIsReadFromTheClock(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := NewMetrics(prometheus.NewRegistry(), clk)
	r := m.Instrument("kollecttarget", reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		clk.SetTime(clk.Now().Add(3 * time.Second))
		return reconcile.Result{}, nil
	}))
	for range 2 {
		_, _ = r.Reconcile(context.Background(), reconcile.Request{})
	}
	var got dto.Metric
	if err := m.duration.WithLabelValues("kollecttarget").(prometheus.Histogram).Write(&got); err != nil {
		t.Fatal(err)
	}
	if h := got.GetHistogram(); h.GetSampleCount() != 2 || h.GetSampleSum() != 6 {
		t.Errorf("%d reconciles summing %vs, want 2 summing 6s", h.GetSampleCount(), h.GetSampleSum())
	}
}
