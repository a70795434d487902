//go:build integration

package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"kollect.dev/kollect/actors/engine"
	"kollect.dev/kollect/actors/inventory"
	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/actors/target"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/model/selection"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

type reports struct {
	mu      sync.Mutex
	targets map[messages.TargetRef]target.Report
	invs    map[string]inventory.Report
}

func (r *reports) TargetReport(t target.Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.targets[t.Ref] = t
}

func (r *reports) InventoryReport(i inventory.Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.invs[i.ID.Namespace+"/"+i.ID.Name] = i
}

var deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

func gitOut(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, what, check)
}

func deployment(ns, name, app, image string) *appsv1.Deployment {
	lbl := map[string]string{"app": app}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
}

func TestDeploymentsFlowIntoGit(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	for _, ns := range []string{"demo", "later"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []*appsv1.Deployment{deployment("demo", "storefront", "shop", "shop:1.0"), deployment("demo", "cart", "shop", "cart:1.0"),
		deployment("demo", "admin", "internal", "admin:1.0"), deployment("later", "checkout", "shop", "checkout:1.0")} {
		if err := c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}

	// Trace the whole run: event → extraction → export → sink write.
	spans := tracetest.NewInMemoryExporter()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)))
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	bare := filepath.Join(t.TempDir(), "inventory.git")
	if out, err := gitOut(t, "", "init", "--bare", "-b", "main", bare); err != nil {
		t.Fatal(out)
	}
	backend, err := git.New(git.Config{URL: "file://" + bare, MirrorDir: t.TempDir(), Layout: git.Layout{
		Mode: "perResource", Content: "attributes", Format: "yaml", Cluster: "test",
		ItemPath: "namespaces/{sourceNamespace}/{kind}/{sourceName}{extension}"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(backend.Close) // its mirror's writer stops before the directories go

	dyn := dynamic.NewForConfigOrDie(env.Config)
	disco := discovery.NewDiscoveryClientForConfigOrDie(env.Config)
	inf := informers.New(dyn, disco, time.Hour, 15*time.Second, nil)
	if err := inf.StartNamespaces(ctx); err != nil {
		t.Fatal(err)
	}
	rep := &reports{targets: map[messages.TargetRef]target.Report{}, invs: map[string]inventory.Report{}}
	eng := engine.New(inf, nil, rep, 50*time.Millisecond, nil, nil)
	t.Cleanup(eng.Stop)

	ex, err := extract.Compile([]extract.Attribute{
		{Name: "image", Path: "$.spec.template.spec.containers[0].image"},
		{Name: "replicas", Path: "$.spec.replicas"},
	}, extract.NewScrubber())
	if err != nil {
		t.Fatal(err)
	}
	nsSel, _ := labels.Parse("team=shop")
	appSel, _ := labels.Parse("app=shop")
	shop := messages.TargetRef{Kind: "KollectTarget", Namespace: "default", Name: "shop"}
	if err := eng.UpsertTarget(ctx, engine.TargetSpec{Ref: shop, Generation: 1, ProfileGVK: deploymentGVK, Extractor: ex,
		Selection: &selection.Set{Labels: appSel, Included: map[string]bool{"demo": true, "later": true}}}); err != nil {
		t.Fatal(err)
	}
	_ = eng.UpsertInventory(engine.InventorySpec{Key: "KollectInventory:default/demo-inventory", Kind: "KollectInventory", ID: rows.Identity{Namespace: "default", Name: "demo-inventory", Generation: 1},
		Bindings: []sink.Config{{Inventory: "default/demo-inventory", Key: "snapshot/git", Type: "git", BackendID: "engine_test", Backend: sinks.Whole(backend)}}})

	files := func() (string, error) { return gitOut(t, bare, "ls-tree", "-r", "--name-only", "main") }
	wantFiles := func(want ...string) func() error {
		return func() error {
			got, err := files()
			if err != nil {
				return fmt.Errorf("%v: %s", err, got)
			}
			if got != strings.Join(want, "\n") {
				return fmt.Errorf("files:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
			return nil
		}
	}
	eventually(t, "matching Deployments appear in Git", wantFiles(
		"namespaces/demo/deployment/cart.yaml", "namespaces/demo/deployment/storefront.yaml", "namespaces/later/deployment/checkout.yaml"))
	if got, _ := gitOut(t, bare, "show", "main:namespaces/demo/deployment/storefront.yaml"); got != "image: shop:1.0\nreplicas: 2" {
		t.Errorf("storefront attributes:\n%s", got)
	}

	// Change an image: one new commit whose diff is that line.
	before, _ := gitOut(t, bare, "rev-list", "--count", "main")
	var d appsv1.Deployment
	if err := c.Get(ctx, keyOf("demo", "storefront"), &d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "shop:1.1"
	if err := c.Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the image change is committed", func() error {
		diff, err := gitOut(t, bare, "diff", "--unified=0", "main~1", "main")
		if err != nil || !strings.Contains(diff, "+image: shop:1.1") {
			return fmt.Errorf("diff: %s %v", diff, err)
		}
		return nil
	})
	after, _ := gitOut(t, bare, "rev-list", "--count", "main")
	diff, _ := gitOut(t, bare, "diff", "--unified=0", "main~1", "main")
	if atoi(after) != atoi(before)+1 || strings.Count(diff, "\n+") != 2 || strings.Count(diff, "\n-") != 2 {
		t.Errorf("want exactly one commit changing one line (%s → %s commits):\n%s", before, after, diff)
	}

	// Delete a Deployment: its file is removed.
	if err := c.Delete(ctx, deployment("demo", "cart", "", "")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a deleted Deployment's file is removed", wantFiles(
		"namespaces/demo/deployment/storefront.yaml", "namespaces/later/deployment/checkout.yaml"))

	// A second target in the same namespace: its rows join the inventory.
	internal, _ := labels.Parse("app=internal")
	if err := eng.UpsertTarget(ctx, engine.TargetSpec{Ref: messages.TargetRef{Kind: "KollectTarget", Namespace: "default", Name: "internal"},
		Generation: 1, ProfileGVK: deploymentGVK, Extractor: ex, Selection: &selection.Set{Labels: internal, NamespaceSelector: nsSel}}); err != nil {
		t.Fatal(err)
	}
	// A namespace that starts matching the selector: its objects appear.
	var ns corev1.Namespace
	if err := c.Get(ctx, keyOf("", "demo"), &ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels["team"] = "shop"
	if err := c.Update(ctx, &ns); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second target's rows join once its namespace matches", wantFiles(
		"namespaces/demo/deployment/admin.yaml", "namespaces/demo/deployment/storefront.yaml", "namespaces/later/deployment/checkout.yaml"))

	// A target for a kind that is not installed fails alone.
	err = eng.UpsertTarget(ctx, engine.TargetSpec{Ref: messages.TargetRef{Kind: "KollectTarget", Namespace: "default", Name: "argo"},
		Generation: 1, ProfileGVK: schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"},
		Extractor: ex, Selection: &selection.Set{}})
	if !errors.Is(err, informers.ErrNotServed) {
		t.Fatalf("want ErrNotServed for an uninstalled kind, got %v", err)
	}

	// A cluster-scoped kind is tested as if it lived in "default": a target
	// restricted to other namespaces collects no Namespaces; one allowing
	// "default" does.
	nsGVK := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	nsEx, _ := extract.Compile([]extract.Attribute{{Name: "phase", Path: "$.status.phase"}}, nil)
	for _, tc := range []struct {
		name    string
		include map[string]bool
		want    bool
	}{{"ns-elsewhere", map[string]bool{"demo": true}, false}, {"ns-default", map[string]bool{"default": true}, true}} {
		ref := messages.TargetRef{Kind: "KollectTarget", Namespace: "elsewhere", Name: tc.name}
		if err := eng.UpsertTarget(ctx, engine.TargetSpec{Ref: ref, Generation: 1, ProfileGVK: nsGVK, Extractor: nsEx,
			Selection: &selection.Set{Included: tc.include}}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "cluster-scoped target "+tc.name+" reports", func() error {
			rep.mu.Lock()
			defer rep.mu.Unlock()
			r, ok := rep.targets[ref]
			if !ok || (r.Count > 0) != tc.want {
				return fmt.Errorf("report %+v (want rows: %v)", r, tc.want)
			}
			return nil
		})
		eng.RemoveTarget(ref)
	}

	rep.mu.Lock()
	got := rep.targets[shop].Count
	inv := rep.invs["default/demo-inventory"]
	rep.mu.Unlock()
	if got != 2 {
		t.Errorf("shop target: want a live count of 2 rows, got %d", got)
	}
	if inv.ItemCount != 3 || len(inv.Bindings) != 1 || inv.Bindings[0].Exported != 3 || inv.Bindings[0].Err != "" {
		t.Errorf("inventory report: want 3 rows, all acknowledged by the sink, got %+v", inv)
	}
	checkTracePath(t, spans.GetSpans())
}

// checkTracePath: collect spans name their target; export spans link to
// collect spans whose changes they shipped, and each has a sink-write child.
func checkTracePath(t *testing.T, spans tracetest.SpanStubs) {
	t.Helper()
	collects := map[string]bool{}
	writesUnder := map[string]bool{}
	for _, s := range spans {
		switch s.Name {
		case "kollect.collect":
			for _, a := range s.Attributes {
				if a.Key == "kollect.target" && strings.Contains(a.Value.AsString(), "default/shop") {
					collects[s.SpanContext.SpanID().String()] = true
				}
			}
		case "kollect.sink.write":
			writesUnder[s.Parent.SpanID().String()] = true
		}
	}
	linked := 0
	for _, s := range spans {
		if s.Name != "kollect.export" {
			continue
		}
		if !writesUnder[s.SpanContext.SpanID().String()] {
			t.Errorf("export span %s has no kollect.sink.write child", s.SpanContext.SpanID())
		}
		for _, l := range s.Links {
			if collects[l.SpanContext.SpanID().String()] {
				linked++
			}
		}
	}
	if len(collects) == 0 || linked == 0 {
		t.Errorf("trace path: %d collect spans of target shop, %d links from exports to them", len(collects), linked)
	}
}

func keyOf(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

func atoi(s string) int {
	n := 0
	_, _ = fmt.Sscan(s, &n)
	return n
}
