package target_test

import (
	"testing"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/controllers/target"
)

// Row values become series labels only on the operator's opt-in: whoever
// scrapes /metrics may not be allowed to read the rows.
func TestAttributeLabelsAreOptIn(t *testing.T) {
	p := &kollectv1alpha1.KollectProfile{Spec: kollectv1alpha1.KollectProfileSpec{Metrics: []kollectv1alpha1.ProfileMetric{
		{Name: "replicas_total", Path: "replicas", Labels: []string{"image", "owner"}}}}}
	for _, tc := range []struct {
		name   string
		opt    bool
		labels int
	}{
		{"by default", false, 0},
		{"with --metrics-attribute-labels", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := target.ProfileMetrics(p, tc.opt)
			if len(m) != 1 || m[0].Name != "replicas_total" || m[0].Path != "replicas" || len(m[0].Labels) != tc.labels {
				t.Fatalf("metrics %+v, want replicas_total with %d labels", m, tc.labels)
			}
		})
	}
}
