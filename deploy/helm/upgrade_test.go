package helm_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/harness/testenv"
	"kollect.dev/kollect/pipeline/tools/manifests"
)

// TestUpgradeFromUpstreamKeepsEveryInventoryExporting upgrades a cluster
// running upstream in place: custom resources stored under upstream's
// CRDs, upstream's values file, and the manager started as upstream's
// Deployment starts the image (/manager and flags). Every inventory must
// export, with no custom resource edited.
//
// Upstream's CRDs are not in this repository: CRDs of the same group,
// kinds, version and scope whose schema keeps every field stand in for
// them, so whatever upstream stored, they store too.
func TestUpgradeFromUpstreamKeepsEveryInventoryExporting(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	remote := filepath.Join(t.TempDir(), "inventory.git")
	if out, err := exec.Command("git", "init", "--bare", "-b", "main", remote).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}

	ours := chartCRDs(t)
	for _, crd := range ours {
		setSchemas(t, crd.GetName(), &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)})
	}
	waitForSchema(t, true)

	for _, ns := range []string{"shop", "payments", "kollect-system"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, d := range []*appsv1.Deployment{deployment("shop", "storefront", "shop"), deployment("shop", "cart", "shop"), deployment("shop", "debug", ""),
		deployment("payments", "api", ""), deployment("payments", "ledger", "")} {
		if err := c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	crs, err := manifests.ReadFile("testdata/upgrade/upstream-crs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]*unstructured.Unstructured{}
	for _, o := range crs {
		if spec, ok := o.Object["spec"].(map[string]any); ok && spec["endpoint"] == "REMOTE" {
			spec["endpoint"] = "file://" + remote
		}
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("store %s %s/%s under upstream's CRDs: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		if o.GetAPIVersion() == kollectv1alpha1.GroupVersion.String() {
			stored[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = o.DeepCopy()
		}
	}

	// The upgrade: the chart's CRDs, applied as helm and kubectl apply
	// --server-side do.
	for _, crd := range ours {
		if err := c.Patch(ctx, crd, client.Apply, client.ForceOwnership, client.FieldOwner("helm")); err != nil {
			t.Fatalf("upgrade CRD %s: %v", crd.GetName(), err)
		}
	}
	waitForSchema(t, false)
	unedited := func(when string) {
		t.Helper()
		for key, want := range stored {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(want.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
				t.Fatalf("%s: %s: %v", when, key, err)
			}
			// The API server adds the schema's defaults when it reads;
			// every field written must read back as written.
			if got.GetGeneration() != want.GetGeneration() || !contains(got.Object["spec"], want.Object["spec"]) {
				t.Errorf("%s: %s was edited: generation %d → %d, spec %v → %v", when, key, want.GetGeneration(), got.GetGeneration(), want.Object["spec"], got.Object["spec"])
			}
			// The next kubectl apply of the same object passes the new schema.
			if err := c.Update(ctx, got, client.DryRunAll); err != nil {
				t.Errorf("%s: %s as stored is refused by this chart's CRD: %v", when, key, err)
			}
		}
	}
	unedited("after the CRD upgrade")

	stop := startAsUpstreamDeployment(t, manager(t, "testdata/upstream-values.yaml"))
	defer stop()
	for _, inv := range []struct{ ns, name string }{{"shop", "shop-inventory"}, {"payments", "payments-inventory"}} {
		testenv.Eventually(t, 90*time.Second, inv.ns+"/"+inv.name+" exports", func() error {
			var got kollectv1alpha1.KollectInventory
			if err := c.Get(ctx, client.ObjectKey{Namespace: inv.ns, Name: inv.name}, &got); err != nil {
				return err
			}
			ready := meta.FindStatusCondition(got.Status.Conditions, "Ready")
			if ready == nil || ready.Status != metav1.ConditionTrue || got.Status.ExportedCount == nil || *got.Status.ExportedCount != 2 {
				return fmt.Errorf("Ready %+v, exported %v", ready, got.Status.ExportedCount)
			}
			return nil
		})
	}
	out, err := exec.Command("git", "-C", remote, "ls-tree", "-r", "--name-only", "main").CombinedOutput()
	if err != nil {
		t.Fatalf("git ls-tree: %v\n%s", err, out)
	}
	files := strings.Fields(string(out))
	for _, want := range []string{"clusters/prod-west/payments/deployment/api.yaml", "clusters/prod-west/payments/deployment/ledger.yaml"} {
		if !slices.Contains(files, want) {
			t.Errorf("the remote lacks %s: %v", want, files)
		}
	}
	if !slices.ContainsFunc(files, func(f string) bool { return strings.Contains(f, "shop-inventory") }) {
		t.Errorf("the remote holds no document of shop-inventory: %v", files)
	}
	unedited("after the manager ran")
}

// contains says whether got holds every field of want with want's value
// (maps may hold more: defaults).
func contains(got, want any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return reflect.DeepEqual(got, want)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range wm {
		if !contains(gm[k], v) {
			return false
		}
	}
	return true
}

func deployment(ns, name, partOf string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	if partOf != "" {
		labels["app.kubernetes.io/part-of"] = partOf
	}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/" + name + ":1"}}}}}}
}

// chartCRDs reads the chart's CRDs, as objects to apply.
func chartCRDs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob("kollect/crds/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("the chart's CRDs: %v %v", files, err)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		objs, err := manifests.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, objs...)
	}
	return out
}

// setSchemas gives every version of a stored CRD schema.
func setSchemas(t *testing.T, name string, schema *apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, 10*time.Second, "replace the schema of "+name, func() error {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
			return err
		}
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema.DeepCopy()}
		}
		return env.Client.Update(ctx, &crd)
	})
}

// waitForSchema waits until the API server validates with the stand-ins
// (permissive) or with this chart's schema: a sink of a type nobody
// knows is stored by the first and refused by the second.
func waitForSchema(t *testing.T, permissive bool) {
	t.Helper()
	probe := func() error {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kollect.dev/v1alpha1", "kind": "KollectSnapshotSink",
			"metadata": map[string]any{"name": "schema-probe", "namespace": "default"}, "spec": map[string]any{"type": "no-such-type"}}}
		return env.Client.Create(context.Background(), u, client.DryRunAll)
	}
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("the API server validates permissively: %t", permissive), func() error {
		err := probe()
		if permissive == (err == nil) {
			return nil
		}
		return fmt.Errorf("a sink of an unknown type: %v", err)
	})
}

// manager returns the command line of the manager container the chart
// renders with valueFiles: its args, without our image's subcommand.
func manager(t *testing.T, valueFiles ...string) []string {
	t.Helper()
	for _, o := range render(t, valueFiles...) {
		if o.GetKind() != "Deployment" {
			continue
		}
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "args")
		if len(args) == 0 || args[0] != "manager" {
			t.Fatalf("the manager container's args: %v", args)
		}
		return args[1:]
	}
	t.Fatal("no Deployment rendered")
	return nil
}

// startAsUpstreamDeployment runs the operator binary as /manager with
// args, as upstream's Deployment calls the image. Only what a test on one
// machine must change is changed: addresses (free loopback ports),
// webhooks (nothing here serves their certificate), and loopback sinks
// allowed (the remote is a local folder). It returns once /readyz
// answers.
func startAsUpstreamDeployment(t *testing.T, args []string) (stop func()) {
	t.Helper()
	dir := t.TempDir()
	bin, err := testenv.BuildOperator(dir)
	if err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(dir, "manager")
	if err := os.Symlink(bin, entry); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, "upgrade"); err != nil {
		t.Fatal(err)
	}
	probes, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	override := map[string]string{"--health-probe-bind-address": probes, "--metrics-bind-address": metrics, "--validating-webhooks-enabled": "false"}
	var cmdline []string
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if _, ok := override[name]; !ok {
			cmdline = append(cmdline, a)
		}
	}
	for name, v := range override {
		cmdline = append(cmdline, name+"="+v)
	}
	cmdline = append(cmdline, "--kubeconfig="+kubeconfig, "--dev-allow-loopback-sinks")
	log, err := os.Create(filepath.Join(dir, "manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(entry, cmdline...)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE=kollect-system", "KOLLECT_GIT_MIRROR_DIR="+filepath.Join(dir, "mirrors"))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			out, _ := os.ReadFile(log.Name())
			t.Logf("manager log:\n%s", tail(string(out), 4000))
		}
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if resp, err := http.Get("http://" + probes + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return stop
			}
		}
		select {
		case err := <-done:
			out, _ := os.ReadFile(log.Name())
			t.Fatalf("/manager %s exited: %v\n%s", strings.Join(cmdline, " "), err, tail(string(out), 4000))
		default:
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatal("/manager did not become ready")
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func ptr[T any](v T) *T { return &v }
