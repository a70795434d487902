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

// An export that kept the rows of a target still listing (a partial
// snapshot after a restart) counts only the other targets' rows: the sink
// still holds the kept ones, so exportedCount and lastChecksum keep the
// last complete export's, while the export's time moves on. A complete
// export sets them again.
func TestAPartialExportKeepsTheLastCompleteCount(t *testing.T) {
	var s kollectv1alpha1.KollectInventoryStatus
	complete := &inventory.Report{ItemCount: 20, Bindings: []inventory.BindingReport{{Key: "event/log", LastExport: time.Unix(100, 0), Exported: 20, LastChecksum: "all"}}}
	inventoryStatus(&s, Verdict{Generation: 1}, complete)
	partial := &inventory.Report{ItemCount: 0, Waiting: []string{"KollectTarget:team/t"}, Settling: true,
		Bindings: []inventory.BindingReport{{Key: "event/log", LastExport: time.Unix(200, 0), Exported: 0, LastChecksum: "none", Partial: true}}}
	inventoryStatus(&s, Verdict{Generation: 1}, partial)
	e := s.SinkExports[0]
	if *e.ExportedCount != 20 || e.LastChecksum != "all" || !e.LastExportTime.Time.Equal(time.Unix(200, 0)) || *s.ExportedCount != 20 {
		t.Fatalf("after a partial export: exportedCount %d (inventory %d), checksum %q, time %v; want 20, \"all\", the partial export's time",
			*e.ExportedCount, *s.ExportedCount, e.LastChecksum, e.LastExportTime)
	}
	again := &inventory.Report{ItemCount: 19, Bindings: []inventory.BindingReport{{Key: "event/log", LastExport: time.Unix(300, 0), Exported: 19, LastChecksum: "new"}}}
	inventoryStatus(&s, Verdict{Generation: 1}, again)
	if e := s.SinkExports[0]; *e.ExportedCount != 19 || e.LastChecksum != "new" {
		t.Fatalf("after a complete export: exportedCount %d, checksum %q", *e.ExportedCount, e.LastChecksum)
	}
}
