//go:build integration

package engine_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"kollect.dev/kollect/actors/engine"
	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/actors/target"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// failingReporter panics on the first `panics` inventory reports that
// carry an acknowledged export: a stand-in for any bug that crashes an
// inventory actor.
type failingReporter struct {
	panics atomic.Int32
	mu     sync.Mutex
	last   inventory.Report
}

func (f *failingReporter) TargetReport(target.Report) {}

func (f *failingReporter) InventoryReport(r inventory.Report) {
	if r.Stopped == "" && len(r.Bindings) > 0 && !r.Bindings[0].LastExport.IsZero() && f.panics.Add(-1) >= 0 {
		panic("reporter bug")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = r
}

func (f *failingReporter) get() inventory.Report {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

type countingBackend struct{ exports atomic.Int32 }

func (c *countingBackend) Export(_ context.Context, d *rows.Delta) (sinks.Ack, error) {
	c.exports.Add(1)
	return sinks.Ack{Rows: len(d.Next.Rows)}, nil
}

func supervisedEngine(t *testing.T, rep engine.Reporter) *engine.Engine {
	t.Helper()
	inf := informers.New(dynamic.NewForConfigOrDie(env.Config), discovery.NewDiscoveryClientForConfigOrDie(env.Config), time.Hour, 15*time.Second, nil)
	eng := engine.New(inf, nil, rep, 20*time.Millisecond, nil, nil)
	t.Cleanup(eng.Stop)
	return eng
}

func spec(name string, backend sinks.Backend) engine.InventorySpec {
	return engine.InventorySpec{Key: "KollectInventory:sup/" + name, Kind: "KollectInventory", ID: rows.Identity{Namespace: "sup", Name: name, Generation: 1},
		Bindings: []sink.Config{{Inventory: "sup/" + name, Key: "event/x", Type: "x", BackendID: "supervision_test", Backend: backend}}}
}

// An inventory actor that crashes once is restarted by its guardian and
// resumes from its remembered configuration, without a new reconcile.
func TestACrashedInventoryResumesWithItsConfiguration(t *testing.T) {
	rep := &failingReporter{}
	rep.panics.Store(1)
	eng := supervisedEngine(t, rep)
	be := &countingBackend{}
	if err := eng.UpsertInventory(spec("once", be)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the restarted inventory reports an acknowledged export", func() error {
		r := rep.get()
		if len(r.Bindings) == 0 || r.Bindings[0].LastExport.IsZero() {
			return errNotYet
		}
		return nil
	})
	if rep.panics.Load() >= 0 {
		t.Fatal("the reporter never panicked: the test did not crash the actor")
	}
}

// An inventory actor that keeps crashing is stopped by its guardian, and
// the stop is reported, never left as a silent dead PID.
func TestAnInventoryThatKeepsCrashingIsStoppedAndReported(t *testing.T) {
	rep := &failingReporter{}
	rep.panics.Store(1 << 20)
	eng := supervisedEngine(t, rep)
	if err := eng.UpsertInventory(spec("always", &countingBackend{})); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stopped inventory is reported", func() error {
		if r := rep.get(); !strings.Contains(r.Stopped, "stopped after more than") || r.ID.Name != "always" {
			return errNotYet
		}
		return nil
	})
}

var errNotYet = errorString("not yet")

type errorString string

func (e errorString) Error() string { return string(e) }
