//go:build integration

package engine_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"kollect.dev/kollect/actors/engine"
	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/model/selection"
	"kollect.dev/kollect/sinks"
)

// printed is a snapshot backend that hands each export to a channel.
type printed chan *rows.Snapshot

func (p printed) Export(_ context.Context, s *rows.Snapshot) (sinks.Ack, error) {
	p <- s
	return sinks.Ack{Rows: len(s.Rows), Changed: true}, nil
}

// The engine is the data plane's facade: a target says what to read and
// keep (a kind, a selection, attributes), an inventory which targets'
// rows go to which sinks. The control plane calls only these methods; the
// actors behind them own the rows. This example runs against the test
// package's API server (kube-apiserver and etcd).
func Example() {
	ctx := context.Background()
	_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example"}})
	for _, name := range []string{"red", "blue"} {
		_ = env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "example", Name: name},
			Data: map[string]string{"colour": name}})
	}

	inf := informers.New(dynamic.NewForConfigOrDie(env.Config), discovery.NewDiscoveryClientForConfigOrDie(env.Config), time.Hour, 15*time.Second, nil)
	eng := engine.New(inf, nil, nil, 10*time.Millisecond, nil, nil)
	defer eng.Stop()

	ex, _ := extract.Compile([]extract.Attribute{{Name: "colour", Path: "$.data.colour"}}, extract.NewScrubber())
	ref := messages.TargetRef{Kind: "KollectTarget", Namespace: "example", Name: "colours"}
	if err := eng.UpsertTarget(ctx, engine.TargetSpec{Ref: ref, Generation: 1, Extractor: ex,
		ProfileGVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		Selection:  &selection.Set{Included: map[string]bool{"example": true}}, Namespaces: []string{"example"}}); err != nil {
		fmt.Println(err)
		return
	}
	exports := make(printed, 10)
	_ = eng.UpsertInventory(engine.InventorySpec{Key: "KollectInventory:example/colours", Kind: "KollectInventory",
		ID:       rows.Identity{Namespace: "example", Name: "colours", Generation: 1},
		Bindings: []sink.Config{{Inventory: "example/colours", Key: "snapshot/print", Type: "print", BackendID: "example_test", Backend: sinks.Whole(exports)}},
		Expect:   []messages.TargetRef{ref}})

	// The first export holds every object the target listed.
	snap := <-exports
	var got []string
	for _, r := range snap.Rows {
		if strings.HasPrefix(r.Name, "kube-root-ca") {
			continue // the API server's own ConfigMap in every namespace
		}
		got = append(got, fmt.Sprintf("%s=%v", r.Name, r.Attributes().Get("colour")))
	}
	fmt.Println(strings.Join(got, " "))
	// Output:
	// blue=blue red=red
}
