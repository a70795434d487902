package status

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// kollect_collected_objects sums the targets sharing a profile and kind,
// follows their counts, and loses its series with the last of them.
func TestCollectedObjectsSumTargets(t *testing.T) {
	w := NewWriter(nil, 0, clock.RealClock{})
	a := Key{Kind: Target, NamespacedName: types.NamespacedName{Namespace: "a", Name: "t"}}
	b := Key{Kind: Target, NamespacedName: types.NamespacedName{Namespace: "b", Name: "t"}}
	w.countCollected(a, "p", "v1/ConfigMap", 3)
	w.countCollected(b, "p", "v1/ConfigMap", 4)
	w.countCollected(a, "p", "v1/ConfigMap", 5)
	if got := testutil.ToFloat64(w.collected.WithLabelValues("p", "v1/ConfigMap")); got != 9 {
		t.Fatalf("sum %v, want 9", got)
	}
	w.countCollected(b, "q", "v1/ConfigMap", 4) // b's profile changed
	if got := testutil.ToFloat64(w.collected.WithLabelValues("p", "v1/ConfigMap")); got != 5 {
		t.Fatalf("sum after b moved %v, want 5", got)
	}
	w.forgetMetrics(a)
	w.forgetMetrics(b)
	if n := testutil.CollectAndCount(w.collected); n != 0 {
		t.Fatalf("%d series left after every target went", n)
	}
}
