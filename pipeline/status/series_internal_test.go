package status

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"kollect.dev/kollect/actors/target"
)

func TestProfileSeriesSumTargetsAndGoWithThem(t *testing.T) {
	p := newProfileSeries()
	reg := prometheus.NewRegistry()
	reg.MustRegister(p, p.capped)
	a := Key{Kind: Target, NamespacedName: types.NamespacedName{Namespace: "a", Name: "t"}}
	b := Key{Kind: Target, NamespacedName: types.NamespacedName{Namespace: "b", Name: "t"}}
	c := Key{Kind: ClusterTarget, NamespacedName: types.NamespacedName{Name: "c"}}
	p.record(a, target.Report{Profile: "apps", GVK: "apps/v1/Deployment", Series: &target.Series{
		Values: map[string]float64{"object_count": 2, "replicas": 5},
		Labeled: map[string]*target.Labeled{"replicas": {Labels: []string{"image", "app.kubernetes.io/name"},
			Tuples: []target.Tuple{{Values: []string{"web:1", "web"}, Sum: 5}}, Dropped: 3}}}})
	p.record(b, target.Report{Profile: "apps", GVK: "apps/v1/Deployment", Series: &target.Series{
		Values: map[string]float64{"object_count": 1, "replicas": 1},
		Labeled: map[string]*target.Labeled{"replicas": {Labels: []string{"image", "app.kubernetes.io/name"},
			Tuples: []target.Tuple{{Values: []string{"web:1", "web"}, Sum: 1}}}}}})
	p.record(c, target.Report{Profile: "ops/cms", GVK: "v1/ConfigMap", Series: &target.Series{
		Values: map[string]float64{"object_count": 4, "keys": 9},
		Labeled: map[string]*target.Labeled{"keys": {Labels: []string{"series"},
			Tuples: []target.Tuple{{Values: []string{"x"}, Sum: 9}}}}}})
	want := `# HELP kollect_custom_resource_labeled_series_capped_total Label tuples of a labelled profile series dropped beyond 200 (per target, each time its series are computed).
# TYPE kollect_custom_resource_labeled_series_capped_total counter
kollect_custom_resource_labeled_series_capped_total{gvk="apps/v1/Deployment",profile="apps",series="replicas"} 3
# HELP kollect_custom_resource_labeled_series Profile-derived series by the values of the metric's label attributes (at most 200 tuples per series and target).
# TYPE kollect_custom_resource_labeled_series gauge
kollect_custom_resource_labeled_series{app_kubernetes_io_name="web",gvk="apps/v1/Deployment",image="web:1",profile="apps",series="replicas"} 6
kollect_custom_resource_labeled_series{attr_series="x",gvk="v1/ConfigMap",profile="ops/cms",series="keys"} 9
# HELP kollect_custom_resource_series Profile-derived series: object_count, and per spec.metrics entry (or, with none, per numeric attribute) the sum of the attribute over a target's rows; summed over targets sharing profile and kind.
# TYPE kollect_custom_resource_series gauge
kollect_custom_resource_series{gvk="apps/v1/Deployment",profile="apps",series="object_count"} 3
kollect_custom_resource_series{gvk="apps/v1/Deployment",profile="apps",series="replicas"} 6
kollect_custom_resource_series{gvk="v1/ConfigMap",profile="ops/cms",series="keys"} 9
kollect_custom_resource_series{gvk="v1/ConfigMap",profile="ops/cms",series="object_count"} 4
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// The same series again is not counted twice; a target that goes takes
	// its series with it.
	r := p.by[a]
	p.record(a, *r)
	p.forget(b)
	p.forget(c)
	if n := testutil.CollectAndCount(p); n != 3 {
		t.Errorf("%d series after two targets went, want a's 3", n)
	}
	if v := testutil.ToFloat64(p.capped.WithLabelValues("apps", "apps/v1/Deployment", "replicas")); v != 3 {
		t.Errorf("capped counter %v after the same series twice, want 3", v)
	}
}

func TestLabelNames(t *testing.T) {
	got := LabelNames([]string{"image", "app.kubernetes.io/name", "9lives", "profile", "__x", "a.b", "a_b"})
	want := []string{"image", "app_kubernetes_io_name", "attr_9lives", "attr_profile", "attr___x", "a_b", "a_b_2"}
	if !slices.Equal(got, want) {
		t.Errorf("LabelNames = %v, want %v", got, want)
	}
}
