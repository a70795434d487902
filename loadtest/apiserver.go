package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/deploy/crds"
	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/pipeline/manager"
	"kollect.dev/kollect/pipeline/tools/manifests"
)

// loadLabel marks every namespace a run creates, so a run against a real
// cluster can be cleaned up (kubectl delete ns -l kollect.dev/loadtest=yes).
const loadLabel = "kollect.dev/loadtest"

// pipelineNamespace holds the run's Kollect CRs and sink Secret.
const pipelineNamespace = "kollect-loadtest"

// apiServer is the cluster a run drives: a local control plane started
// for the run, or the cluster a kubeconfig names.
type apiServer struct {
	client     client.Client
	kubeconfig string // what the operator process is given
	close      func()
}

// connect starts the local control plane (kubeconfig == "") or connects to
// the kubeconfig's current context. On a real cluster it installs the CRDs
// when missing, refuses to run beside an installed Kollect operator (it
// would reconcile the run's CRs too) or over a previous run's namespaces,
// and close deletes the namespaces the run created.
func connect(ctx context.Context, kubeconfig, dir string, logf func(string, ...any)) (*apiServer, error) {
	if kubeconfig == "" {
		env, err := testenv.Start()
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "kubeconfig")
		if err := env.WriteKubeconfig(path, "loadtest"); err != nil {
			_ = env.Stop()
			return nil, err
		}
		return &apiServer{client: env.Client, kubeconfig: path, close: func() { _ = env.Stop() }}, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	scheme, err := manager.NewScheme()
	if err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &deps, client.MatchingLabels{"app.kubernetes.io/name": "kollect"}); err != nil {
		return nil, fmt.Errorf("list Deployments on %s (the load test needs cluster-admin rights): %w", cfg.Host, err)
	}
	if len(deps.Items) > 0 {
		d := deps.Items[0]
		return nil, fmt.Errorf("a Kollect operator runs in this cluster (%s/%s): it would reconcile the load test's CRs too; use a cluster without one", d.Namespace, d.Name)
	}
	var left corev1.NamespaceList
	if err := c.List(ctx, &left, client.HasLabels{loadLabel}); err != nil {
		return nil, err
	}
	if len(left.Items) > 0 {
		return nil, fmt.Errorf("namespace %s is left from an earlier run: kubectl delete namespace -l %s", left.Items[0].Name, loadLabel)
	}
	logf("running against %s; installing the Kollect CRDs", cfg.Host)
	if err := installCRDs(ctx, c); err != nil {
		return nil, err
	}
	cleanup := func() {
		// Deleting a namespace deletes what the run created in it; the
		// CRDs stay (other tools may use them).
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var nss corev1.NamespaceList
		err := c.List(cctx, &nss, client.HasLabels{loadLabel})
		for i := 0; err == nil && i < len(nss.Items); i++ {
			err = client.IgnoreNotFound(c.Delete(cctx, &nss.Items[i]))
		}
		if err != nil {
			logf("cleanup: %v (delete what is left with kubectl delete namespace -l %s)", err, loadLabel)
		}
	}
	return &apiServer{client: c, kubeconfig: kubeconfig, close: cleanup}, nil
}

// installCRDs applies the embedded CRDs and waits until they are served.
func installCRDs(ctx context.Context, c client.Client) error {
	var objs []*unstructured.Unstructured
	err := crds.Each(func(f string, data []byte) error {
		o, err := manifests.Decode(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		objs = append(objs, o...)
		return nil
	})
	if err != nil {
		return err
	}
	if err := manifests.Apply(ctx, c, "kollect-loadtest", objs); err != nil {
		return err
	}
	for _, o := range objs {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			var crd apiextensionsv1.CustomResourceDefinition
			err := c.Get(ctx, client.ObjectKey{Name: o.GetName()}, &crd)
			if err == nil && established(&crd) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not established within a minute: %v", o.GetName(), err)
			}
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// createNamespace creates a namespace labelled as the run's.
func createNamespace(ctx context.Context, c client.Client, name string, labels map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{loadLabel: "yes"}}}
	for k, v := range labels {
		ns.Labels[k] = v
	}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}
