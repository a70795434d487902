package target_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/actors/target"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/collect"
	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/selection"
)

// seriesReports keeps every distinct Series a target reported.
type seriesReports struct {
	mu   sync.Mutex
	seen []*target.Series
}

func (s *seriesReports) TargetReport(r target.Report) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Series != nil && (len(s.seen) == 0 || s.seen[len(s.seen)-1] != r.Series) {
		s.seen = append(s.seen, r.Series)
	}
}

func (s *seriesReports) all() []*target.Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*target.Series(nil), s.seen...)
}

// TestSeriesAtMostOncePerInterval: a target computes its profile series
// after its rows change, then not again within the sample interval
// however often they change; with no interval, after every change.
func TestSeriesAtMostOncePerInterval(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	ex, err := extract.Compile([]extract.Attribute{{Name: "replicas", Path: "$.spec.replicas"}}, extract.NewScrubber())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		every time.Duration
		want  func(n int) bool
	}{
		{time.Hour, func(n int) bool { return n == 1 }},
		{0, func(n int) bool { return n > 1 }},
	} {
		t.Run(fmt.Sprint(tc.every), func(t *testing.T) {
			sys := actor.NewActorSystem()
			defer sys.Shutdown()
			rep := &seriesReports{}
			inbox := target.NewInbox(sys.Root, nil)
			tgt := sys.Root.Spawn(target.Props(inbox, noNamespaces{}, rep, nil, "t", nil))
			ref := messages.TargetRef{Kind: "KollectTarget", Namespace: "ns", Name: "t"}
			sys.Root.Send(tgt, &target.Configure{Config: &target.Config{Ref: ref, Sources: []target.Source{{GVR: gvr, GVK: gvk, Store: emptyStore{}}},
				Evaluator: &collect.Evaluator{TargetNamespace: ref.Namespace, TargetName: ref.Name, ProfileGVK: gvk, Selection: &selection.Set{}, Extractor: ex},
				Profile:   "p", GVK: "apps/v1/Deployment", SampleEvery: tc.every}})
			for i := range 20 {
				o := object(i)
				inbox.Notify(informers.Event{GVR: gvr, Key: o.GetNamespace() + "/" + o.GetName(), Object: o})
				time.Sleep(5 * time.Millisecond)
			}
			deadline := time.Now().Add(5 * time.Second)
			for rep.all() == nil || (tc.every == 0 && rep.all()[len(rep.all())-1].Values[target.ObjectCount] != 20) {
				if time.Now().After(deadline) {
					t.Fatalf("series %d", len(rep.all()))
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond)
			if n := len(rep.all()); !tc.want(n) {
				t.Errorf("interval %v: %d series computed for 20 changes", tc.every, n)
			}
		})
	}
}
