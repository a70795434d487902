package status_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/actors/target"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/pipeline/status"
)

// Engine reports become reconcile requests of their own kind: those that
// arrived before the controller started when it starts, later ones no
// sooner than the interval, many reports of one object as one request.
func TestReportsBecomeRequestsOfTheirKind(t *testing.T) {
	w := status.NewWriter(nil, 50*time.Millisecond, clock.RealClock{})
	early := messages.TargetRef{Kind: "KollectTarget", Namespace: "a", Name: "early"}
	w.TargetReport(target.Report{Ref: early, Count: 1})

	ctx := context.Background()
	targets := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	invs := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer targets.ShutDown()
	defer invs.ShutDown()
	if err := w.Source(status.Target).Start(ctx, targets); err != nil {
		t.Fatal(err)
	}
	if err := w.Source(status.Inventory).Start(ctx, invs); err != nil {
		t.Fatal(err)
	}
	if got, _ := targets.Get(); got.NamespacedName != (types.NamespacedName{Namespace: "a", Name: "early"}) {
		t.Fatalf("first request %v, want a/early", got)
	} else {
		targets.Done(got)
	}

	late := messages.TargetRef{Kind: "KollectTarget", Namespace: "a", Name: "late"}
	start := time.Now()
	for i := range 100 {
		w.TargetReport(target.Report{Ref: late, Count: i})
	}
	w.InventoryReport(inventory.Report{Kind: "KollectInventory", ID: rows.Identity{Namespace: "a", Name: "inv"}})
	got, _ := targets.Get()
	if waited := time.Since(start); waited < 40*time.Millisecond {
		t.Errorf("a report was turned into a request after %s, before the interval", waited)
	}
	if got.Name != "late" || targets.Len() != 0 {
		t.Errorf("got %v with %d more queued; want one request for a/late", got, targets.Len())
	}
	targets.Done(got)
	if inv, _ := invs.Get(); inv.NamespacedName != (types.NamespacedName{Namespace: "a", Name: "inv"}) {
		t.Errorf("inventory request %v", inv)
	}
}
