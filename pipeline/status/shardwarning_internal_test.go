package status

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kollect.dev/kollect/actors/inventory"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// Upstream's shard warning: ExportShardWarning=True/ApproachingExportCap
// from 1800 rows, removed below, across successive reports.
func TestExportShardWarningFollowsTheRowCount(t *testing.T) {
	var s kollectv1alpha1.KollectInventoryStatus
	for _, step := range []struct {
		items int
		warn  bool
	}{{10, false}, {1799, false}, {1800, true}, {2500, true}, {5, false}} {
		if !inventoryStatus(&s, Verdict{Generation: 1}, &inventory.Report{ItemCount: step.items}) {
			t.Fatal("a report must write a status")
		}
		c := meta.FindStatusCondition(s.Conditions, TypeExportShardWarning)
		if got := c != nil; got != step.warn {
			t.Fatalf("%d rows: condition %+v, want present %v", step.items, c, step.warn)
		}
		if step.warn && (c.Status != metav1.ConditionTrue || c.Reason != ReasonApproachingCap || !strings.Contains(c.Message, "split the inventory")) {
			t.Errorf("%d rows: %+v", step.items, c)
		}
	}
}
