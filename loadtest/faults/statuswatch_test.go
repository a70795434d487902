package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// statusWatch records every version of one Kollect object the API server
// stores from the moment it starts: what a restart writes into status, a
// flip and its repair included, which a poll of the end state misses.
type statusWatch struct {
	mu       sync.Mutex
	versions []*unstructured.Unstructured
	stop     context.CancelFunc
	done     chan struct{}
}

// watchStatus starts recording the object resource/name in the rig's
// namespace; stop it with finish.
func (r *rig) watchStatus(resource, name string) *statusWatch {
	r.t.Helper()
	dc, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		r.t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "kollect.dev", Version: "v1alpha1", Resource: resource}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := dc.Resource(gvr).Namespace(r.ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		cancel()
		r.t.Fatalf("watch %s %s: %v", resource, name, err)
	}
	sw := &statusWatch{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(sw.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				sw.mu.Lock()
				sw.versions = append(sw.versions, u)
				sw.mu.Unlock()
			}
		}
	}()
	return sw
}

// finish stops the watch and returns every version seen, the first being
// the one stored when it started.
func (sw *statusWatch) finish() []*unstructured.Unstructured {
	sw.stop()
	<-sw.done
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.versions
}

// notSynced lists the versions whose status said anything but Synced=True,
// in the object's own words: "first export in progress", and also
// WaitingForTargets, which a manager that has just started does not say
// while its targets list anew within its grace (the sinks hold every row).
func notSynced(versions []*unstructured.Unstructured) []string {
	var out []string
	for _, u := range versions {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Synced" && m["status"] != "True" {
				out = append(out, fmt.Sprintf("resourceVersion %s: Synced=%v/%v: %v", u.GetResourceVersion(), m["status"], m["reason"], m["message"]))
			}
		}
	}
	return out
}

// TestNotSyncedReadsEveryVersion keeps the check above honest: a version
// that says Progressing or WaitingForTargets is reported, a Synced one is
// not.
func TestNotSyncedReadsEveryVersion(t *testing.T) {
	version := func(rv, status, reason string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "True"},
			map[string]any{"type": "Synced", "status": status, "reason": reason, "message": "m"}}}}}
		u.SetResourceVersion(rv)
		return u
	}
	got := notSynced([]*unstructured.Unstructured{version("1", "True", "Exported"), version("2", "False", "Progressing"),
		version("3", "False", "WaitingForTargets"), version("4", "True", "Exported")})
	if len(got) != 2 || !strings.HasPrefix(got[0], "resourceVersion 2: Synced=False/Progressing") || !strings.HasPrefix(got[1], "resourceVersion 3: Synced=False/WaitingForTargets") {
		t.Fatalf("notSynced = %q", got)
	}
}
