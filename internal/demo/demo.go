package demo

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"kollect.dev/kollect/internal/servers/s3test"
	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/pipeline/tools/manifests"
)

//go:embed pipeline.yaml
var pipelineYAML string

// Options configure a demo run.
type Options struct {
	// Dir holds everything the demo writes: the repository, the
	// kubeconfig, component logs. It is emptied first.
	Dir string
	// Assets is the folder with the control-plane binaries.
	Assets string
	// Cluster also runs kube-controller-manager, kube-scheduler and kwok,
	// so Deployments get Running Pods; without it the API server alone
	// holds the Deployments.
	Cluster bool
	// Keep leaves everything running after the story until ctx ends, so
	// the cluster can be explored with the kubeconfig.
	Keep bool
	// Out receives the story.
	Out io.Writer
	// DuckDB is where DuckDB's Node API is installed (a prefix with
	// node_modules/@duckdb/node-api); "" skips the query over the Parquet
	// export.
	DuckDB string
}

// Result is what the demo produced.
type Result struct {
	Repo       string // the bare repository the inventory is written to
	Kubeconfig string
	Commits    int
}

// Run tells the story. Everything started is stopped before it returns.
func Run(ctx context.Context, o Options) (*Result, error) {
	say := func(format string, a ...any) { fmt.Fprintf(o.Out, "==> "+format+"\n", a...) }
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	res := &Result{Repo: filepath.Join(dir, "inventory.git"), Kubeconfig: filepath.Join(dir, "kubeconfig")}

	say("Starting a local control plane (etcd, kube-apiserver) and installing the Kollect CRDs")
	if o.Assets != "" {
		os.Setenv("KUBEBUILDER_ASSETS", o.Assets) //nolint:errcheck // read by testenv.Start
	}
	env, err := testenv.Start()
	if err != nil {
		return nil, err
	}
	defer func() {
		say("Stopping the control plane")
		_ = env.Stop()
	}()
	if err := env.WriteKubeconfig(res.Kubeconfig, "kollect-demo"); err != nil {
		return nil, err
	}
	c := env.Client
	var procs []*process
	if o.Cluster {
		say("Starting kube-controller-manager, kube-scheduler and kwok (one fake node, so Pods run)")
		procs, err = startCluster(ctx, c, assetsDir(o.Assets), dir, res.Kubeconfig)
		if err != nil {
			return nil, err
		}
		defer func() {
			for i := len(procs) - 1; i >= 0; i-- {
				procs[i].stop()
			}
		}()
	}

	say("Creating namespace demo with four Deployments: three of the shop, one (grafana) the target leaves out")
	if err := createWorkloads(ctx, c); err != nil {
		return nil, err
	}
	if o.Cluster {
		if err := waitReady(ctx, c, procs); err != nil {
			return nil, err
		}
		say("The Deployments are rolled out: ReplicaSets and Running Pods on the fake node")
	}

	say("Starting the Kollect manager and applying a Git pipeline (profile, target, sink, inventory)")
	if out, err := git("", "init", "--bare", "-q", "-b", "main", res.Repo); err != nil {
		return nil, fmt.Errorf("git init: %v: %s", err, out)
	}
	// The demo's repository is a local bare one (file://): a development
	// setting the operator refuses unless told.
	s3, err := s3test.New()
	if err != nil {
		return nil, err
	}
	defer s3.Stop()
	if err := s3.CreateBucket("inventory"); err != nil {
		return nil, err
	}
	mgr, err := env.StartManager("--zap-log-level=error", "--export-batch-window=500ms", "--dev-allow-loopback-sinks")
	if err != nil {
		return nil, err
	}
	defer func() {
		say("Stopping the manager")
		_ = mgr.Stop()
	}()
	if err := applyPipeline(ctx, c, "file://"+res.Repo, s3.URL); err != nil {
		return nil, err
	}
	first, err := waitFor(ctx, "the first export", func() (bool, error) {
		files, _ := git(res.Repo, "ls-tree", "-r", "--name-only", "main")
		return strings.Count(files, ".yaml") == 3 && (!o.Cluster || readyInGit(res.Repo)), nil
	})
	if err != nil {
		return nil, err
	}
	say("Exported in %v: one file per Deployment, one commit", first.Round(10*time.Millisecond))
	base, _ := git(res.Repo, "rev-parse", "main")

	say("Changing storefront's image and scaling cart to 3 replicas")
	if err := mutate(ctx, c, "storefront", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/example/storefront:1.5.0"
	}); err != nil {
		return nil, err
	}
	if err := mutate(ctx, c, "cart", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(3)) }); err != nil {
		return nil, err
	}
	if _, err := waitFor(ctx, "the changes to be committed", func() (bool, error) {
		diff, _ := git(res.Repo, "diff", base, "main")
		ok := strings.Contains(diff, "+image: ghcr.io/example/storefront:1.5.0") && strings.Contains(diff, "+replicas: 3")
		return ok && (!o.Cluster || strings.Contains(diff, "+ready: 3")), nil
	}); err != nil {
		return nil, err
	}
	if err := parquetAct(ctx, o, res.Repo, s3, dir); err != nil {
		return nil, err
	}

	count, _ := git(res.Repo, "rev-list", "--count", "main")
	_, _ = fmt.Sscan(count, &res.Commits)
	log, _ := git(res.Repo, "log", "--stat", "--format=%n%h %s", "main")
	diff, _ := git(res.Repo, "diff", "--stat", "-p", base, "main")
	var inv unstructured.Unstructured
	inv.SetAPIVersion("kollect.dev/v1alpha1")
	inv.SetKind("KollectInventory")
	_ = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop"}, &inv)
	exported, _, _ := unstructured.NestedInt64(inv.Object, "status", "exportedCount")

	fmt.Fprintf(o.Out, "\n----- git log --stat (the audit trail) -----\n%s\n", log)
	fmt.Fprintf(o.Out, "\n----- git diff (the drift since the first export) -----\n%s\n", diff)
	fmt.Fprintf(o.Out, `
What happened:
  - Kollect watched the Deployments in namespace demo through a shared informer,
    kept three attributes of each shop Deployment (image, replicas, ready
    Pods) and wrote one YAML file per Deployment to %s,
    one commit per change.
  - The inventory reports what Git acknowledged: exportedCount=%d.
  - The image change and the scale-up became commits whose diff is exactly
    what changed; nothing is committed while nothing changes.
  - The same rows went, as Parquet, to an S3 bucket: a queryable inventory
    without a database.

Look further:
  git --git-dir %s log -p
  bin/kollect collect --kubeconfig %s -f internal/demo/pipeline.yaml
`, rel(res.Repo), exported, rel(res.Repo), rel(res.Kubeconfig))
	if o.Keep {
		kubectl := "kubectl"
		if _, err := os.Stat(filepath.Join(assetsDir(o.Assets), "kubectl")); err == nil {
			kubectl = rel(filepath.Join(assetsDir(o.Assets), "kubectl"))
		}
		fmt.Fprintf(o.Out, `  %[1]s --kubeconfig %[2]s get kinv,ktgt,ksnap -A
  %[1]s --kubeconfig %[2]s -n demo get deploy,rs,pods

Everything keeps running until you press Ctrl-C.
`, kubectl, rel(res.Kubeconfig))
		<-ctx.Done()
	} else {
		fmt.Fprintf(o.Out, "  make demo DEMO_KEEP=1   keeps the cluster running to explore it with kubectl --kubeconfig %s\n\n", rel(res.Kubeconfig))
	}
	return res, nil
}

// rel shortens a path to one relative to the working directory.
func rel(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

func assetsDir(a string) string {
	if a != "" {
		return a
	}
	return os.Getenv("KUBEBUILDER_ASSETS")
}

func ptr[T any](v T) *T { return &v }

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// readyInGit reports whether every exported Deployment shows its Pods
// ready (the ready attribute equals replicas).
func readyInGit(repo string) bool {
	files, _ := git(repo, "ls-tree", "-r", "--name-only", "main")
	for _, f := range strings.Fields(files) {
		body, _ := git(repo, "show", "main:"+f)
		var a struct{ Replicas, Ready int }
		if yaml.Unmarshal([]byte(body), &a) != nil || a.Ready != a.Replicas {
			return false
		}
	}
	return files != ""
}

func createWorkloads(ctx context.Context, c client.Client) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}); err != nil {
		return err
	}
	for _, d := range []struct {
		name, image string
		replicas    int32
		tier        string
	}{{"storefront", "ghcr.io/example/storefront:1.4.2", 2, "shop"}, {"cart", "ghcr.io/example/cart:2.0.0", 1, "shop"},
		{"search", "ghcr.io/example/search:0.9.1", 1, "shop"}, {"grafana", "grafana/grafana:11.0.0", 1, "monitoring"}} {
		lbl := map[string]string{"app": d.name, "tier": d.tier}
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: d.name, Labels: lbl},
			Spec: appsv1.DeploymentSpec{Replicas: ptr(d.replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": d.name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: d.name, Image: d.image}},
						Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}}}}
		if err := c.Create(ctx, dep); err != nil {
			return fmt.Errorf("create Deployment %s: %w", d.name, err)
		}
	}
	return nil
}

func waitReady(ctx context.Context, c client.Client, procs []*process) error {
	_, err := waitFor(ctx, "the Deployments to roll out", func() (bool, error) {
		for _, p := range procs {
			if err := p.exited(); err != nil {
				return false, err
			}
		}
		var list appsv1.DeploymentList
		if err := c.List(ctx, &list, client.InNamespace("demo")); err != nil {
			return false, nil
		}
		for _, d := range list.Items {
			if d.Spec.Replicas == nil || d.Status.ReadyReplicas != *d.Spec.Replicas {
				return false, nil
			}
		}
		return len(list.Items) > 0, nil
	})
	return err
}

func applyPipeline(ctx context.Context, c client.Client, remote, s3URL string) error {
	yml := strings.NewReplacer("{{REMOTE}}", remote, "{{S3}}", s3URL, "{{S3_KEY}}", s3test.AccessKey, "{{S3_SECRET}}", s3test.SecretKey).Replace(pipelineYAML)
	objs, err := manifests.Decode(strings.NewReader(yml))
	if err != nil {
		return fmt.Errorf("embedded pipeline: %w", err)
	}
	return manifests.Apply(ctx, c, "kollect-demo", objs)
}

func mutate(ctx context.Context, c client.Client, name string, change func(*appsv1.Deployment)) error {
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "demo", Name: name}, &d); err != nil {
		return err
	}
	change(&d)
	return c.Update(ctx, &d)
}

// waitFor polls ok until it holds, ctx ends or two minutes pass, and
// returns how long it took.
func waitFor(ctx context.Context, what string, ok func() (bool, error)) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(2 * time.Minute)
	for {
		done, err := ok()
		if err != nil {
			return 0, err
		}
		if done {
			return time.Since(start), nil
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
		if time.Now().After(deadline) {
			return 0, errors.New("timed out waiting for " + what + "; component logs are in the demo directory")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
