//go:build integration

package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"kollect.dev/kollect/actors/engine"
	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/model/selection"
)

// TestNothingStartsOnceStopped: a reconcile that runs during the manager's
// shutdown, after the engine stopped, is told so at once. It starts no
// target or inventory that nothing would stop, and does not wait on the
// shut-down actor system (it used to wait 10 s for a spawn, past the
// manager's grace period). Stopping twice is harmless.
func TestNothingStartsOnceStopped(t *testing.T) {
	ctx := context.Background()
	inf := informers.New(dynamic.NewForConfigOrDie(env.Config), discovery.NewDiscoveryClientForConfigOrDie(env.Config), time.Hour, 15*time.Second, nil)
	if err := inf.StartNamespaces(ctx); err != nil {
		t.Fatal(err)
	}
	eng := engine.New(inf, nil, nil, 50*time.Millisecond, nil, nil)
	running := engine.InventorySpec{Key: "KollectInventory:default/running", Kind: "KollectInventory",
		ID: rows.Identity{Namespace: "default", Name: "running", Generation: 1}}
	if err := eng.UpsertInventory(running); err != nil {
		t.Fatal(err)
	}
	eng.Stop()

	later := running
	later.Key, later.ID.Name = "KollectInventory:default/later", "later"
	if err := eng.UpsertInventory(later); !errors.Is(err, engine.ErrStopped) {
		t.Fatalf("an inventory upserted after Stop: %v, want ErrStopped", err)
	}
	if err := eng.UpsertInventory(running); !errors.Is(err, engine.ErrStopped) {
		t.Fatalf("the running inventory reconfigured after Stop: %v, want ErrStopped", err)
	}
	ex, err := extract.Compile([]extract.Attribute{{Name: "image", Path: "$.spec.template.spec.containers[0].image"}}, extract.NewScrubber())
	if err != nil {
		t.Fatal(err)
	}
	ref := messages.TargetRef{Kind: "KollectTarget", Namespace: "default", Name: "late"}
	err = eng.UpsertTarget(ctx, engine.TargetSpec{Ref: ref, Generation: 1, ProfileGVK: deploymentGVK, Extractor: ex,
		Selection: &selection.Set{Included: map[string]bool{"default": true}}})
	if !errors.Is(err, engine.ErrStopped) {
		t.Fatalf("a target upserted after Stop: %v, want ErrStopped", err)
	}
	eng.RemoveInventory(running.Key)
	eng.RemoveTarget(ref)
	eng.Stop()
}
