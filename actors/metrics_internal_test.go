package actors

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// kollect_export_spill_warn_total counts acknowledged exports of 1 MiB or
// more; smaller ones and failures are not counted.
func TestSpillWarningsCountLargeExports(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	m.Export("git", 0.1, 0, 1<<20-1, "")
	m.Export("git", 0.1, 0, 1<<20, "")
	m.Export("s3", 0.1, 0, 5<<20, "")
	m.Export("kafka", 0.1, 0, 5<<20, "transient")
	if got := testutil.ToFloat64(m.spill); got != 2 {
		t.Fatalf("kollect_export_spill_warn_total = %v, want 2", got)
	}
}
