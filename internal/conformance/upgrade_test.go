//go:build conformance

package conformance_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"kollect.dev/kollect/internal/testenv"
)

// TestUpstreamDemoSurvivesTheUpgrade upgrades a cluster running upstream's
// hero demo in place: its samples (samples/demo/git-only, unchanged but
// for the remote, a local folder here) stored under stand-ins for
// upstream's CRDs, the chart's CRDs applied over them, and the binary run
// as /manager with the flags the chart renders from upstream's values
// (with namespaceCeiling: all, the value that keeps upstream's reach, as
// docs/migrating.md says to set first). The inventory exports and no
// sample is edited.
func TestUpstreamDemoSurvivesTheUpgrade(t *testing.T) {
	ctx := context.Background()
	e, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	c := e.Client
	bare := filepath.Join(t.TempDir(), "inventory-demo.git")
	if out, err := git("", "init", "--bare", "-b", "main", bare); err != nil {
		t.Fatal(out)
	}
	if err := e.StandInCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kollect-system"}}); err != nil {
		t.Fatal(err)
	}
	written := heroDemo(t, c, bare, func(doc *unstructured.Unstructured) error { return c.Create(ctx, doc) })
	if err := e.UpgradeCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Unedited(ctx, written); err != nil {
		t.Fatalf("after the CRD upgrade: %v", err)
	}

	up, err := e.StartAsUpstream(t.TempDir(), upstreamManagerArgs(t, e.RepoRoot))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		up.Stop()
		if t.Failed() {
			t.Logf("manager log:\n%s", up.Tail(4000))
		}
	}()
	files := func() string { out, _ := git(bare, "ls-tree", "-r", "--name-only", "main"); return out }
	waitUntil(t, 60*time.Second, "the shop Deployments appear as per-resource files", func() bool {
		return files() == "namespaces/demo/deployment/cart.yaml\nnamespaces/demo/deployment/storefront.yaml"
	})
	if err := e.Unedited(ctx, written); err != nil {
		t.Errorf("after the manager ran: %v", err)
	}
}

// upstreamManagerArgs renders the chart with upstream's values and
// returns the manager container's flags (its args without our image's
// subcommand): what upstream's Deployment passes to /manager.
func upstreamManagerArgs(t *testing.T, root string) []string {
	t.Helper()
	helm := os.Getenv("HELM")
	if helm == "" {
		helm = filepath.Join(root, "bin", "helm")
	}
	chart := filepath.Join(root, "deploy", "helm")
	out, err := exec.Command(helm, "template", "kollect", filepath.Join(chart, "kollect"), "--namespace", "kollect-system",
		"-f", filepath.Join(chart, "testdata", "upstream-values.yaml"), "--set", "tenancy.namespaceCeiling=all").CombinedOutput()
	if err != nil {
		t.Fatalf("helm template (make helm, or set HELM): %v\n%s", err, out)
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(out)), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	flags, err := testenv.ManagerFlags(objs)
	if err != nil {
		t.Fatal(err)
	}
	return flags
}
