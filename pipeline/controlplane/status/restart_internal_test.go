package status

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kollect.dev/kollect/actors/inventory"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// A manager that has just started reports its inventory before its targets
// have listed. While it settles, and every sink acknowledged an export of
// the inventory's generation (the last manager's, or a holding one of this
// manager's), status stays as it was: no WaitingForTargets flip, no
// partial item count. Once the grace ended (a target that cannot list),
// after a failure, or when the generation moved on, waiting is what
// status says.
func TestWaitingTargetsAfterARestartChangeNothingTheSinksHold(t *testing.T) {
	synced := func() kollectv1alpha1.KollectInventoryStatus {
		var s kollectv1alpha1.KollectInventoryStatus
		before := &inventory.Report{ItemCount: 10, Bindings: []inventory.BindingReport{
			{Key: "database/pg", LastExport: time.Unix(100, 0), Exported: 10}, {Key: "event/log", LastExport: time.Unix(100, 0), Exported: 10}}}
		if !inventoryStatus(&s, Verdict{Generation: 3}, before) {
			t.Fatal("a report must write a status")
		}
		if c := meta.FindStatusCondition(s.Conditions, TypeSynced); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("before the restart: %+v", s.Conditions)
		}
		return s
	}
	cases := []struct {
		name       string
		generation int64
		settling   bool
		exported   bool // this manager exported to the first binding already (holding)
		failed     bool // the second binding failed its first export
		unchanged  bool
	}{
		{"restarted, every sink holds this generation", 3, true, false, false, true},
		{"restarted, one sink exported while holding", 3, true, true, false, true},
		{"restarted, one sink failed", 3, true, false, true, false},
		{"the grace ended: a target that cannot list", 3, false, false, false, false},
		{"a new generation", 4, true, false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := synced()
			want := s.DeepCopy()
			after := &inventory.Report{ItemCount: 4, Waiting: []string{"KollectTarget/team/t"}, Settling: tc.settling, Bindings: []inventory.BindingReport{
				{Key: "database/pg"}, {Key: "event/log"}}}
			if tc.exported {
				after.Bindings[0].LastExport, after.Bindings[0].Exported = time.Unix(200, 0), 10
			}
			if tc.failed {
				after.Bindings[1].Err = "connection refused"
			}
			inventoryStatus(&s, Verdict{Generation: tc.generation}, after)
			c := meta.FindStatusCondition(s.Conditions, TypeSynced)
			if tc.unchanged {
				if s.ItemCount != want.ItemCount || c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonExported {
					t.Fatalf("status moved: itemCount %d (was %d), Synced %+v", s.ItemCount, want.ItemCount, c)
				}
				return
			}
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonWaitingForTargets || s.ItemCount != 4 {
				t.Fatalf("itemCount %d, Synced %+v; want WaitingForTargets over 4 items", s.ItemCount, c)
			}
		})
	}
}
