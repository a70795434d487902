package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/pipeline/tools/manifests"
)

// An upgrade from upstream, step by step: StandInCRDs, objects stored
// under them, UpgradeCRDs, then StartAsUpstream runs the binary as
// upstream's Deployment calls the image.
//
// Upstream's CRDs are not in this repository: CRDs of the same group,
// kinds, version and scope whose schema keeps every field stand in for
// them, so whatever upstream stored, they store too.

// ChartCRDs reads the chart's CRDs (deploy/helm/kollect/crds), as
// objects to apply.
func (e *Env) ChartCRDs() ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(e.RepoRoot, "deploy", "helm", "kollect", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("the chart's CRDs: %v %v", files, err)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		objs, err := manifests.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// StandInCRDs replaces the schema of every Kollect CRD with one that keeps
// every field, and waits until the API server validates with it.
func (e *Env) StandInCRDs(ctx context.Context) error {
	crds, err := e.ChartCRDs()
	if err != nil {
		return err
	}
	keep := &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}
	for _, crd := range crds {
		if err := retry(10*time.Second, func() error {
			var cur apiextensionsv1.CustomResourceDefinition
			if err := e.Client.Get(ctx, client.ObjectKey{Name: crd.GetName()}, &cur); err != nil {
				return err
			}
			for i := range cur.Spec.Versions {
				cur.Spec.Versions[i].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: keep.DeepCopy()}
			}
			return e.Client.Update(ctx, &cur)
		}); err != nil {
			return fmt.Errorf("stand in for %s: %w", crd.GetName(), err)
		}
	}
	return e.waitForSchema(ctx, true)
}

// UpgradeCRDs applies the chart's CRDs server-side, as helm and kubectl
// apply --server-side do, and waits until the API server validates with
// them.
func (e *Env) UpgradeCRDs(ctx context.Context) error {
	crds, err := e.ChartCRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if err := e.Client.Patch(ctx, crd, client.Apply, client.ForceOwnership, client.FieldOwner("helm")); err != nil {
			return fmt.Errorf("upgrade CRD %s: %w", crd.GetName(), err)
		}
	}
	return e.waitForSchema(ctx, false)
}

// waitForSchema waits until the API server validates with the stand-ins
// (permissive) or with the chart's schema: a sink of a type nobody knows
// is stored by the first and refused by the second.
func (e *Env) waitForSchema(ctx context.Context, permissive bool) error {
	return retry(30*time.Second, func() error {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kollect.dev/v1alpha1", "kind": "KollectSnapshotSink",
			"metadata": map[string]any{"name": "schema-probe", "namespace": "default"}, "spec": map[string]any{"type": "no-such-type"}}}
		err := e.Client.Create(ctx, u, client.DryRunAll)
		if permissive == (err == nil) {
			return nil
		}
		return fmt.Errorf("the API server does not validate permissively=%t yet: %v", permissive, err)
	})
}

// Unedited checks that each stored object still holds every field of its
// spec as written (the API server may add the schema's defaults when it
// reads) at the same generation, and that a dry-run update of it as
// stored passes the schema in force.
func (e *Env) Unedited(ctx context.Context, written []*unstructured.Unstructured) error {
	for _, want := range written {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(want.GroupVersionKind())
		key := want.GetKind() + " " + want.GetNamespace() + "/" + want.GetName()
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		if got.GetGeneration() != want.GetGeneration() || !holds(got.Object["spec"], want.Object["spec"]) {
			return fmt.Errorf("%s was edited: generation %d → %d, spec %v → %v", key, want.GetGeneration(), got.GetGeneration(), want.Object["spec"], got.Object["spec"])
		}
		if err := e.Client.Update(ctx, got, client.DryRunAll); err != nil {
			return fmt.Errorf("%s as stored is refused by the CRD in force: %w", key, err)
		}
	}
	return nil
}

// holds says whether got holds every field of want with want's value
// (maps may hold more: defaults).
func holds(got, want any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return reflect.DeepEqual(got, want)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range wm {
		if !holds(gm[k], v) {
			return false
		}
	}
	return true
}

// Upstream is the operator run as upstream's Deployment runs the image.
type Upstream struct {
	cmd  *exec.Cmd
	done chan error
	log  string
}

// StartAsUpstream runs the operator binary as /manager with args (the
// flags a Deployment passes), in dir. Only what a test on one machine
// must change is changed: addresses (free loopback ports), webhooks
// (nothing here serves their certificate), and loopback sinks allowed.
// It returns once /readyz answers.
func (e *Env) StartAsUpstream(dir string, args []string) (*Upstream, error) {
	bin, err := BuildOperator(dir)
	if err != nil {
		return nil, err
	}
	entry := filepath.Join(dir, "manager")
	if err := os.Symlink(bin, entry); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := e.WriteKubeconfig(kubeconfig, "upgrade"); err != nil {
		return nil, err
	}
	probes, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := FreeAddr()
	if err != nil {
		return nil, err
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
	u := &Upstream{log: filepath.Join(dir, "manager.log"), done: make(chan error, 1)}
	log, err := os.Create(u.log)
	if err != nil {
		return nil, err
	}
	u.cmd = exec.Command(entry, cmdline...)
	u.cmd.Env = append(os.Environ(), "POD_NAMESPACE=kollect-system", "KOLLECT_GIT_MIRROR_DIR="+filepath.Join(dir, "mirrors"))
	u.cmd.Stdout, u.cmd.Stderr = log, log
	u.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := u.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	go func() { u.done <- u.cmd.Wait(); log.Close() }()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if resp, err := http.Get("http://" + probes + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return u, nil
			}
		}
		select {
		case err := <-u.done:
			return nil, fmt.Errorf("/manager %s exited: %v\n%s", strings.Join(cmdline, " "), err, u.Tail(4000))
		default:
		}
		if time.Now().After(deadline) {
			u.Stop()
			return nil, fmt.Errorf("/manager did not become ready:\n%s", u.Tail(4000))
		}
	}
}

// Tail is the last n bytes of the operator's output.
func (u *Upstream) Tail(n int) string {
	out, _ := os.ReadFile(u.log)
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return string(out)
}

// Stop ends the operator (SIGTERM, then SIGKILL after 30 s).
func (u *Upstream) Stop() {
	_ = u.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case _ = <-u.done:
	case <-time.After(30 * time.Second):
		_ = u.cmd.Process.Kill()
	}
}

func retry(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ptrTo[T any](v T) *T { return &v }

// ManagerFlags returns the flags the manager container of rendered (a
// chart's objects) is given: its args without our image's subcommand,
// what upstream's Deployment passes to /manager.
func ManagerFlags(rendered []*unstructured.Unstructured) ([]string, error) {
	for _, o := range rendered {
		if o.GetKind() != "Deployment" {
			continue
		}
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if len(cs) == 0 {
			continue
		}
		args, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "args")
		if len(args) == 0 || args[0] != "manager" {
			return nil, fmt.Errorf("the manager container's args: %v", args)
		}
		return args[1:], nil
	}
	return nil, fmt.Errorf("no Deployment rendered")
}
