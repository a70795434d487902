package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kollect.dev/kollect/actors"
	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/actors/target"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/collect"
	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/model/selection"
)

// EngineResult is what an engine-mode run measured.
type EngineResult struct {
	Objects        int                `json:"objects"`
	Events         int                `json:"events"`
	Elapsed        time.Duration      `json:"elapsedNs"`
	EventsPerSec   float64            `json:"eventsPerSecond"`
	AllocsPerEvent float64            `json:"allocsPerEvent"`
	BytesPerRow    float64            `json:"bytesRetainedPerRow"`
	Exports        int                `json:"sinkExports"`
	SinkRows       int                `json:"sinkRows"`
	Lost           int                `json:"rowsLostOrStale"`
	Duplicated     int                `json:"rowsDuplicated"`
	MaxMailbox     map[string]float64 `json:"maxMailboxDepth"`
	PeakRSSBytes   int64              `json:"peakRssBytes"`
	Samples        []Sample           `json:"samples"`
}

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	deploymentGVK  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
)

type emptyStore struct{}

func (emptyStore) List(...string) ([]*unstructured.Unstructured, []string) { return nil, nil }
func (emptyStore) Namespaces() ([]string, bool)                            { return nil, false }

type noNamespaces struct{}

func (noNamespaces) Namespace(string) *unstructured.Unstructured { return nil }

// syntheticObject is object i at version v (its replicas).
func syntheticObject(i, v int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": fmt.Sprintf("load-%06d", i), "namespace": fmt.Sprintf("ns-%02d", i%20),
			"uid": fmt.Sprintf("uid-%06d", i), "labels": map[string]any{"app": "load"}},
		"spec":   map[string]any{"replicas": int64(v)},
		"status": map[string]any{"readyReplicas": int64(v)},
	}}
}

// EngineOptions shape an engine-mode run.
type EngineOptions struct {
	Objects int
	// Updates are sent after the creates, round-robin over the objects, at
	// UpdateRate per second (0: as fast as possible).
	Updates    int
	UpdateRate float64
	// SinkDelay is how long every export takes (a slow sink).
	SinkDelay time.Duration
	// CPUProfile, when set, gets the CPU profile from the first event until
	// the sink holds the final rows.
	CPUProfile io.Writer
}

// RunEngine sends creates and then updates through Inbox → Target →
// Inventory → a recording sink, and waits until the sink holds exactly the
// final rows.
func RunEngine(ctx context.Context, o EngineOptions) (*EngineResult, error) {
	objects, updates, sinkDelay := o.Objects, o.Updates, o.SinkDelay
	ex, err := extract.Compile([]extract.Attribute{
		{Name: "replicas", Path: "$.spec.replicas"},
		{Name: "ready", Path: "cel:has(object.status.readyReplicas) ? object.status.readyReplicas : 0"},
	}, extract.NewScrubber())
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	metrics := actors.NewMetrics(reg)
	rec := newRecorder(sinkDelay, objects)
	sys := actor.NewActorSystem()
	defer sys.Shutdown()

	runtime.GC()
	var base runtime.MemStats // before anything of the run exists: for bytes per row
	runtime.ReadMemStats(&base)
	// Unpaced events are built before the clock starts, so events/s and
	// allocations are the engine's, not the cost of making synthetic
	// objects. Paced updates (a rate) are made as they are sent: their
	// throughput is the rate, and memory stays what the engine holds.
	var every time.Duration
	if o.UpdateRate > 0 {
		every = time.Duration(float64(time.Second) / o.UpdateRate)
	}
	final := make([]int, objects)
	event := func(i int) informers.Event {
		final[i]++
		o := syntheticObject(i, final[i])
		return informers.Event{GVR: deploymentsGVR, Key: o.GetNamespace() + "/" + o.GetName(), Object: o}
	}
	evs := make([]informers.Event, 0, objects)
	for i := range objects {
		evs = append(evs, event(i))
	}
	if every == 0 {
		for u := range updates {
			evs = append(evs, event(u%objects))
		}
	}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	smp := startSampler(os.Getpid(), fromRegistry(reg), nil, 100*time.Millisecond)

	inbox := target.NewInbox(sys.Root, nil)
	ref := messages.TargetRef{Kind: "KollectTarget", Namespace: "default", Name: "load"}
	tgt := sys.Root.Spawn(target.Props(inbox, noNamespaces{}, nil, metrics, "load", nil))
	sys.Root.Send(tgt, &target.Configure{Config: &target.Config{Ref: ref, Sources: []target.Source{{GVR: deploymentsGVR, GVK: deploymentGVK, Store: emptyStore{}}},
		Evaluator: &collect.Evaluator{TargetNamespace: ref.Namespace, TargetName: ref.Name, ProfileGVK: deploymentGVK, Selection: &selection.Set{}, Extractor: ex}}})
	inv := sys.Root.Spawn(inventory.Props(nil, metrics, "load", nil, nil))
	sys.Root.Send(inv, &inventory.Configure{Config: &inventory.Config{ID: rows.Identity{Namespace: "default", Name: "load"},
		Sources: []inventory.Source{{Ref: ref, PID: tgt}}, Bindings: []sink.Config{{Inventory: "default/load", Key: "event/recorder", Type: "recorder", BackendID: "engine", Backend: rec}}}})

	stopProfile := func() {}
	if o.CPUProfile != nil {
		if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		stopProfile = pprof.StopCPUProfile
	}
	start := time.Now()
	for n := range evs {
		inbox.Notify(evs[n])
		evs[n] = informers.Event{} // the engine holds what it keeps
	}
	if every > 0 {
		for u := range updates {
			if wait := time.Until(start.Add(every * time.Duration(u))); wait > 0 {
				time.Sleep(wait)
			}
			inbox.Notify(event(u % objects))
		}
	}
	res := &EngineResult{Objects: objects, Events: objects + updates}
	keys := make([]rows.Key, objects)
	for i := range keys {
		keys[i] = rows.Key{TargetNamespace: "default", TargetName: "load", UID: fmt.Sprintf("uid-%06d", i)}
	}
	// Compare the sink with the final versions only after it acknowledged a
	// new export: the wait must not compete with the engine it measures.
	checked := -1
	var waitErr error
	for {
		if exports, held := rec.counts(); exports != checked {
			// Rows are compared only when the sink holds as many as there
			// are objects: before, the run is not over, and a comparison of
			// every row (a copy and 200,000 lookups) took CPU from the
			// engine it measures.
			checked, res.SinkRows, res.Lost = exports, held, max(0, objects-held)
			if held == objects {
				got, exports, acked, dupes := rec.snapshot()
				if res.Lost = stale(got, keys, final); res.Lost == 0 && len(got) == objects {
					// The run ends when the sink acknowledged the export
					// that made it hold every final row, not when this
					// check (a copy and 200,000 lookups) found it did.
					res.Elapsed = acked.Sub(start)
					res.Exports, res.SinkRows, res.Duplicated = exports, len(got), dupes
					break
				}
			}
		}
		if err := ctx.Err(); err != nil {
			waitErr = fmt.Errorf("the sink holds %d of %d rows (%d stale or missing) when the run ended: %w", res.SinkRows, objects, res.Lost, err)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	stopProfile()
	if waitErr != nil {
		return res, waitErr
	}
	res.Lost = 0
	res.EventsPerSec = float64(res.Events) / res.Elapsed.Seconds()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	res.AllocsPerEvent = float64(after.Mallocs-before.Mallocs) / float64(res.Events)
	res.Samples = smp.finish()
	res.PeakRSSBytes, _, res.MaxMailbox = peaks(res.Samples)
	runtime.KeepAlive(evs) // the events are garbage from here: the heap below holds the rows alone
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc > base.HeapAlloc {
		res.BytesPerRow = float64(after.HeapAlloc-base.HeapAlloc) / float64(objects)
	}
	return res, nil
}

// stale counts objects whose row the sink lacks or holds at an old version.
func stale(held map[rows.Key]*rows.Row, keys []rows.Key, final []int) int {
	n := 0
	for i, v := range final {
		r := held[keys[i]]
		if got, ok := replicas(r); !ok || got != int64(v) {
			n++
		}
	}
	return n
}

// replicas reads a row's replicas attribute from its JSON without decoding
// the rest: the check runs over every row every few milliseconds, inside
// the measured window.
func replicas(r *rows.Row) (int64, bool) {
	if r == nil {
		return 0, false
	}
	js := r.AttributesJSON()
	i := strings.Index(js, `"replicas":`)
	if i < 0 {
		return 0, false
	}
	rest := js[i+len(`"replicas":`):]
	j := strings.IndexAny(rest, ",}")
	if j < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(rest[:j], 10, 64)
	return n, err == nil
}
