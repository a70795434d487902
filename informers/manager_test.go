//go:build integration

package informers_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/internal/eventually"
	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/model/projection"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

type recorder struct {
	mu   sync.Mutex
	seen map[string]informers.Event
}

func (r *recorder) Notify(ev informers.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[ev.Key] = ev
}

func (r *recorder) get(key string) (informers.Event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev, ok := r.seen[key]
	return ev, ok
}

var configMaps = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

func newManager(t *testing.T) *informers.Manager {
	t.Helper()
	m := informers.New(dynamic.NewForConfigOrDie(env.Config), discovery.NewDiscoveryClientForConfigOrDie(env.Config), time.Hour, 10*time.Second, nil)
	t.Cleanup(m.Stop)
	return m
}

func createCM(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "me"}},
		Data: map[string]string{"read": "yes", "unread": "no"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
}

// list lists the store and fails the test on an unreadable cache entry.
func list(t *testing.T, s informers.Store, namespaces ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, unreadable := s.List(namespaces...)
	if len(unreadable) > 0 {
		t.Fatalf("unreadable cache entries %v", unreadable)
	}
	return objs
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	eventually.True(t, 10*time.Second, what, ok)
}

func TestSharedInformerIsScopedRefCountedAndStripped(t *testing.T) {
	ctx := context.Background()
	createCM(t, "inf-a", "one")
	createCM(t, "inf-b", "two")
	m := newManager(t)

	a := &recorder{seen: map[string]informers.Event{}}
	readsA := projection.Base()
	readsA.Add("data", "read")
	gvr, store, _, err := m.Acquire(ctx, configMaps, "a", []string{"inf-a"}, readsA, a)
	if err != nil {
		t.Fatal(err)
	}
	if gvr.Resource != "configmaps" {
		t.Fatalf("discovery resolved %v", gvr)
	}
	// Scoped to inf-a while the only subscriber asks for it.
	if got := len(list(t, store, "inf-b")); got != 0 {
		t.Fatalf("a namespace-scoped informer cached %d objects of another namespace", got)
	}
	waitFor(t, "the subscriber sees inf-a/one", func() bool { _, ok := a.get("inf-a/one"); return ok })
	ev, _ := a.get("inf-a/one")
	if _, ok := ev.Object.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; ok || ev.Object.GetAnnotations()["keep"] != "me" {
		t.Errorf("transform: want last-applied stripped and other annotations kept, got %v", ev.Object.GetAnnotations())
	}
	if len(ev.Object.GetManagedFields()) != 0 {
		t.Error("transform: managedFields were cached")
	}
	// Only what subscriber a reads is cached.
	data, _ := ev.Object.Object["data"].(map[string]any)
	if data["read"] != "yes" || data["unread"] != nil || ev.Object.GetCreationTimestamp().Unix() > 0 || ev.Object.GetUID() == "" {
		t.Errorf("projection: want uid and data.read only, got %v", ev.Object.Object)
	}

	// A second subscriber wanting every namespace, and every field, widens
	// the informer.
	b := &recorder{seen: map[string]informers.Event{}}
	_, store, _, err = m.Acquire(ctx, configMaps, "b", nil, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the widened informer delivers inf-b/two", func() bool { _, ok := b.get("inf-b/two"); return ok })
	if len(list(t, store, "inf-b")) == 0 {
		t.Error("the widened informer does not cache inf-b")
	}
	// Listing one namespace of a cluster-wide cache gives that namespace's
	// objects only.
	for _, ns := range []string{"inf-a", "inf-b"} {
		for _, o := range list(t, store, ns) {
			if o.GetNamespace() != ns {
				t.Errorf("listing %s gave %s/%s", ns, o.GetNamespace(), o.GetName())
			}
		}
	}
	all, inA, inB := len(list(t, store)), len(list(t, store, "inf-a")), len(list(t, store, "inf-b"))
	if inA == 0 || all < inA+inB {
		t.Errorf("listing every namespace gave %d objects, inf-a %d and inf-b %d", all, inA, inB)
	}
	if both := len(list(t, store, "inf-a", "inf-b")); both != inA+inB {
		t.Errorf("listing inf-a and inf-b together gave %d objects, apart %d and %d", both, inA, inB)
	}
	for _, o := range list(t, store, "inf-a") {
		if d, _ := o.Object["data"].(map[string]any); d["unread"] != "no" {
			t.Errorf("after a subscriber that reads everything, %s is still reduced: %v", o.GetName(), o.Object)
		}
	}

	// Releasing the last subscriber stops the informer: no more events.
	m.Release(gvr, "a")
	m.Release(gvr, "b")
	createCM(t, "inf-b", "three")
	time.Sleep(300 * time.Millisecond)
	if _, ok := b.get("inf-b/three"); ok {
		t.Error("a released subscriber still receives events")
	}
}

func TestAKindThatIsNotServedFailsClearly(t *testing.T) {
	m := newManager(t)
	_, _, _, err := m.Acquire(context.Background(), schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"},
		"x", nil, nil, &recorder{seen: map[string]informers.Event{}})
	if !errors.Is(err, informers.ErrNotServed) {
		t.Fatalf("want ErrNotServed, got %v", err)
	}
}

// TestAResyncIsCounted: a periodic resync delivers each cached object as
// an update of itself, counted per resource.
func TestAResyncIsCounted(t *testing.T) {
	createCM(t, "inf-resync", "one")
	reg := prometheus.NewRegistry()
	m := informers.New(dynamic.NewForConfigOrDie(env.Config), discovery.NewDiscoveryClientForConfigOrDie(env.Config), 300*time.Millisecond, 10*time.Second, informers.NewMetrics(reg))
	t.Cleanup(m.Stop)
	r := &recorder{seen: map[string]informers.Event{}}
	if _, _, _, err := m.Acquire(context.Background(), configMaps, "r", []string{"inf-resync"}, projection.Base(), r); err != nil {
		t.Fatal(err)
	}
	resyncs := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "kollect_informer_resync_dispatches_total" {
				for _, s := range mf.GetMetric() {
					for _, l := range s.GetLabel() {
						if l.GetName() == "resource" && l.GetValue() == "configmaps" {
							return s.GetCounter().GetValue()
						}
					}
				}
			}
		}
		return 0
	}
	waitFor(t, "the subscriber sees inf-resync/one", func() bool { _, ok := r.get("inf-resync/one"); return ok })
	waitFor(t, "two resyncs of the one object are counted", func() bool { return resyncs() >= 2 })
}

// A cache entry that cannot be decoded is named by List, not left out as
// if the object were gone; the others are listed as before.
func TestAnUnreadableCacheEntryIsNamedNotDropped(t *testing.T) {
	createCM(t, "inf-corrupt", "fine")
	createCM(t, "inf-corrupt", "bad")
	m := newManager(t)
	r := &recorder{seen: map[string]informers.Event{}}
	_, store, _, err := m.Acquire(context.Background(), configMaps, "r", []string{"inf-corrupt"}, projection.Base(), r)
	if err != nil {
		t.Fatal(err)
	}
	if err := informers.Corrupt(store, "inf-corrupt/bad"); err != nil {
		t.Fatal(err)
	}
	for _, nss := range [][]string{nil, {"inf-corrupt"}} {
		objs, unreadable := store.List(nss...)
		if len(objs) != 1 || objs[0].GetName() != "fine" || !slices.Equal(unreadable, []string{"inf-corrupt/bad"}) {
			t.Errorf("listing %v: want fine decoded and inf-corrupt/bad unreadable, got %d objects and %v", nss, len(objs), unreadable)
		}
	}
	// The namespaces holding objects come from the index, undecoded.
	if names, ok := store.Namespaces(); !ok || !slices.Equal(names, []string{"inf-corrupt"}) {
		t.Errorf("the store names the namespaces %v (ok %v), want [inf-corrupt]", names, ok)
	}
}

// slowLists delays the lists and watches of one namespace's ConfigMaps.
type slowLists struct {
	next  http.RoundTripper
	path  string
	delay time.Duration
}

func (s slowLists) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == s.path {
		time.Sleep(s.delay)
	}
	return s.next.RoundTrip(r)
}

// The first subscriber's informer (one namespace) is still listing when a
// second subscriber in another namespace needs a cluster-wide one, which
// lists first and takes over: the first subscriber is handed on to it,
// not left waiting for a generation that was stopped before it synced.
func TestASubscriberOfAGenerationReplacedBeforeItListedIsHandedOn(t *testing.T) {
	createCM(t, "inf-slow", "one")
	createCM(t, "inf-fast", "two")
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return slowLists{next: rt, path: "/api/v1/namespaces/inf-slow/configmaps", delay: 2 * time.Second}
	})
	m := informers.New(dynamic.NewForConfigOrDie(cfg), discovery.NewDiscoveryClientForConfigOrDie(env.Config), time.Hour, 8*time.Second, nil)
	t.Cleanup(m.Stop)
	first := make(chan error, 1)
	go func() {
		_, _, _, err := m.Acquire(context.Background(), configMaps, "slow", []string{"inf-slow"}, projection.Base(), &recorder{seen: map[string]informers.Event{}})
		first <- err
	}()
	time.Sleep(300 * time.Millisecond) // the first generation is listing
	if _, _, _, err := m.Acquire(context.Background(), configMaps, "fast", []string{"inf-fast"}, projection.Base(), &recorder{seen: map[string]informers.Event{}}); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatalf("the first subscriber: %v", err)
	}
}
