package target

import (
	"fmt"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/collect"
	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/model/selection"
)

type boomNamespaces struct{}

func (boomNamespaces) Namespace(name string) *unstructured.Unstructured {
	if name == "boom" {
		panic("unforeseen input")
	}
	return nil
}

// TestABatchSpreadOverWorkersGivesTheRowsOfOneAtATime: the same events,
// applied as one batch (evaluated on several workers) and one by one,
// leave the same rows, failures, upserts and deletes.
func TestABatchSpreadOverWorkersGivesTheRowsOfOneAtATime(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	ex, err := extract.Compile([]extract.Attribute{{Name: "replicas", Path: "$.spec.replicas"},
		{Name: "label", Path: "cel:object.metadata.name + '-' + string(object.spec.replicas)"},
		{Name: "needed", Path: "{.spec.needed}"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Sources: []Source{{GVR: gvr, GVK: gvk}},
		Evaluator: &collect.Evaluator{TargetNamespace: "t", TargetName: "t", ProfileGVK: gvk, Selection: &selection.Set{}, Extractor: ex}}
	state := func() *actorState {
		return &actorState{cfg: cfg, ns: boomNamespaces{}, rows: map[objKey]*rows.Row{}, failures: map[objKey]string{}}
	}
	object := func(i, version int) *unstructured.Unstructured {
		ns := fmt.Sprintf("ns-%d", i%7)
		if i%97 == 0 {
			ns = "boom" // evaluation panics: a failure
		}
		spec := map[string]any{"replicas": int64(version)}
		if i%13 != 0 {
			spec["needed"] = "yes" // absent: a required attribute fails
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"namespace": ns, "name": fmt.Sprintf("d-%04d", i), "uid": fmt.Sprintf("uid-%d", i)}, "spec": spec}}
		return u
	}
	// Events come through an inbox, as the actor gets them; a resource
	// no source reads is ignored.
	other := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	batch := func(from, to, version int, deleteEvery int) drained {
		inbox := NewInbox(nil, nil)
		inbox.Notify(informers.Event{GVR: other, Key: "ns/cm", Object: &unstructured.Unstructured{}})
		for i := from; i < to; i++ {
			o := object(i, version)
			ev := informers.Event{GVR: gvr, Key: o.GetNamespace() + "/" + o.GetName(), Object: o}
			if deleteEvery > 0 && i%deleteEvery == 0 {
				ev.Object, ev.Deleted = nil, true
			}
			inbox.Notify(ev)
		}
		return inbox.drain()
	}
	parallel, single := state(), state()
	for round, d := range []drained{batch(0, 3000, 1, 0), batch(1000, 4000, 2, 50)} {
		if len(d.events) != 3001 {
			t.Fatalf("round %d: %d events drained", round, len(d.events))
		}
		pu, pd := parallel.applyAll(d)
		var su, sd int
		for k, p := range d.events {
			u, gone := single.applyAll(drained{events: map[pendingKey]pending{k: p}, gvrs: d.gvrs})
			su, sd = su+len(u), sd+len(gone)
		}
		if len(pu) != su || len(pd) != sd || len(pu) == 0 {
			t.Fatalf("round %d: %d upserts and %d deletes in one batch, %d and %d one at a time", round, len(pu), len(pd), su, sd)
		}
		if len(parallel.rows) != len(single.rows) || len(parallel.failures) != len(single.failures) || len(parallel.failures) == 0 {
			t.Fatalf("round %d: %d rows and %d failures in one batch, %d and %d one at a time", round,
				len(parallel.rows), len(parallel.failures), len(single.rows), len(single.failures))
		}
		for k, r := range single.rows {
			if !r.Equal(parallel.rows[k]) {
				t.Fatalf("round %d: row %v differs", round, k)
			}
		}
		for k, f := range single.failures {
			if parallel.failures[k] != f {
				t.Fatalf("round %d: failure of %v: %q, one at a time %q", round, k, parallel.failures[k], f)
			}
		}
	}
}
