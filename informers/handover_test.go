//go:build integration

package informers_test

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/projection"
)

// relister records events and counts the requests to list again.
type relister struct {
	recorder
	mu      sync.Mutex
	relists int
}

func (r *relister) Notify(ev informers.Event) {
	if ev.Resync {
		r.mu.Lock()
		r.relists++
		r.mu.Unlock()
		return
	}
	r.recorder.Notify(ev)
}

func (r *relister) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.relists
}

// When a subscriber that reads more rebuilds the shared informer, the
// subscriber already there reads the new cache through the store it was
// given (never the stopped one), is asked to list again, and an object
// deleted while the new informer listed is gone from what it reads.
func TestRebuiltInformerHandsOverToEverySubscriber(t *testing.T) {
	ctx := context.Background()
	createCM(t, "hand", "stays")
	createCM(t, "hand", "goes")
	m := newManager(t)

	a := &relister{recorder: recorder{seen: map[string]informers.Event{}}}
	readsA := projection.Base()
	readsA.Add("data", "read")
	gvr, storeA, _, err := m.Acquire(ctx, configMaps, "a", []string{"hand"}, readsA, a)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(list(t, storeA, "hand")); n != 2 {
		t.Fatalf("want 2 cached objects, got %d", n)
	}
	for _, o := range list(t, storeA, "hand") {
		if d, _ := o.Object["data"].(map[string]any); d["unread"] != nil {
			t.Fatalf("the first informer keeps what nobody reads: %v", o.Object)
		}
	}

	// Delete one object while b's Acquire rebuilds the informer.
	del := make(chan error, 1)
	go func() {
		del <- env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "hand", Name: "goes"}})
	}()
	b := &relister{recorder: recorder{seen: map[string]informers.Event{}}}
	if _, _, _, err := m.Acquire(ctx, configMaps, "b", []string{"hand"}, nil, b); err != nil {
		t.Fatal(err)
	}
	if err := <-del; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first subscriber is asked to list again after the swap", func() bool { return a.count() > 0 })
	waitFor(t, "the deleted object is gone from the first subscriber's store", func() bool {
		objs := list(t, storeA, "hand")
		return len(objs) == 1 && objs[0].GetName() == "stays"
	})
	// a's store is the rebuilt cache: it now holds every field.
	for _, o := range list(t, storeA, "hand") {
		if d, _ := o.Object["data"].(map[string]any); d["unread"] != "no" {
			t.Errorf("the first subscriber still reads the old cache: %v", o.Object)
		}
	}
	// Events after the swap reach both subscribers.
	createCM(t, "hand", "after")
	waitFor(t, "both subscribers see an object created after the swap", func() bool {
		_, okA := a.get("hand/after")
		_, okB := b.get("hand/after")
		return okA && okB
	})
	m.Release(gvr, "a")
	m.Release(gvr, "b")
}

// A subscriber that widens the informer but cannot wait for it to list
// gives up; the running informer serves the subscriber already there
// again: it is asked to list, and later events still reach it.
func TestAnAbandonedRebuildFallsBackToTheRunningInformer(t *testing.T) {
	ctx := context.Background()
	createCM(t, "fallback", "before")
	m := newManager(t)
	a := &relister{recorder: recorder{seen: map[string]informers.Event{}}}
	gvr, _, _, err := m.Acquire(ctx, configMaps, "a", []string{"fallback"}, nil, a)
	if err != nil {
		t.Fatal(err)
	}
	// b asks for every namespace (a rebuild) but gives up at once.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	b := &relister{recorder: recorder{seen: map[string]informers.Event{}}}
	if _, _, _, err := m.Acquire(gone, configMaps, "b", nil, nil, b); err == nil {
		t.Fatal("an Acquire whose context is done succeeded")
	}
	waitFor(t, "the remaining subscriber is asked to list again", func() bool { return a.count() > 0 })
	createCM(t, "fallback", "after")
	waitFor(t, "events of the running informer reach the remaining subscriber", func() bool {
		_, ok := a.get("fallback/after")
		return ok
	})
	m.Release(gvr, "a")
}
