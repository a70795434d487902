package main

import (
	"context"
	"fmt"
	"math"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/pipeline/tools/manifests"
)

// object is one load object: a ConfigMap, or a Deployment scaled to zero
// (so a real cluster runs no Pod for it). Its row's `version` attribute is
// the ConfigMap's data.version or the Deployment's pod-template label
// version: what the run writes and then looks for in the sinks.
type object struct {
	namespace, name string
	deployment      bool
}

// objects lays out a run's objects: Deployments spread evenly at the share
// asked for, the rest ConfigMaps, round-robin over the namespaces.
type objects struct {
	n, namespaces int
	deployEvery   int // every deployEvery-th object is a Deployment; 0: none
}

func newObjects(n, namespaces int, deploymentShare float64) objects {
	o := objects{n: n, namespaces: namespaces}
	if deploymentShare > 0 {
		o.deployEvery = max(1, int(math.Round(1/deploymentShare)))
	}
	return o
}

// loadNamespace is the i-th load namespace.
func loadNamespace(i int) string { return fmt.Sprintf("load-%03d", i) }

func (o objects) at(i int) object {
	return object{namespace: loadNamespace(i % o.namespaces), name: fmt.Sprintf("load-%06d", i),
		deployment: o.deployEvery > 0 && i%o.deployEvery == o.deployEvery-1}
}

// perNamespace is how many objects each load namespace holds.
func (o objects) perNamespace() map[string]int {
	out := make(map[string]int, o.namespaces)
	for i := range o.namespaces {
		out[loadNamespace(i)] = o.n / o.namespaces
		if i < o.n%o.namespaces {
			out[loadNamespace(i)]++
		}
	}
	return out
}

func (o objects) deployments() int {
	if o.deployEvery == 0 {
		return 0
	}
	return o.n / o.deployEvery
}

func (ob object) String() string {
	kind := "configmap"
	if ob.deployment {
		kind = "deployment"
	}
	return kind + "/" + ob.namespace + "/" + ob.name
}

// ref is an empty object of ob's kind carrying its name, for patch and
// delete.
func (ob object) ref() client.Object {
	meta := metav1.ObjectMeta{Namespace: ob.namespace, Name: ob.name}
	if ob.deployment {
		return &appsv1.Deployment{ObjectMeta: meta}
	}
	return &corev1.ConfigMap{ObjectMeta: meta}
}

func (ob object) create(ctx context.Context, c client.Client, version string) error {
	meta := metav1.ObjectMeta{Namespace: ob.namespace, Name: ob.name, Labels: map[string]string{"app": "loadtest"}}
	var obj client.Object = &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"version": version}}
	if ob.deployment {
		pod := map[string]string{"app": "loadtest", "load": ob.name}
		obj = &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: pod},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "loadtest", "load": ob.name, "version": version}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/loadtest:" + version}}},
			},
		}}
	}
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("create %s: %w", ob, err)
	}
	return nil
}

func (ob object) update(ctx context.Context, c client.Client, version string) error {
	patch := fmt.Sprintf(`{"data":{"version":%q}}`, version)
	if ob.deployment {
		patch = fmt.Sprintf(`{"spec":{"template":{"metadata":{"labels":{"version":%q}}}}}`, version)
	}
	if err := c.Patch(ctx, ob.ref(), client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		return fmt.Errorf("update %s: %w", ob, err)
	}
	return nil
}

func (ob object) delete(ctx context.Context, c client.Client) error {
	if err := c.Delete(ctx, ob.ref()); err != nil {
		return fmt.Errorf("delete %s: %w", ob, err)
	}
	return nil
}

// applyPipeline creates the load namespaces and the run's pipeline: one
// target per kind, one inventory exporting to Git and Postgres.
func applyPipeline(ctx context.Context, c client.Client, namespaces int, remote, dsn string) error {
	for i := range namespaces {
		if err := createNamespace(ctx, c, loadNamespace(i), map[string]string{"loadtest": "yes"}); err != nil {
			return err
		}
	}
	if err := createNamespace(ctx, c, pipelineNamespace, nil); err != nil {
		return err
	}
	text := strings.NewReplacer("{{REMOTE}}", remote, "{{DSN}}", dsn, "{{NS}}", pipelineNamespace).Replace(pipeline)
	objs, err := manifests.Decode(strings.NewReader(text))
	if err != nil {
		return err
	}
	return manifests.Apply(ctx, c, "loadtest", objs)
}

const pipeline = `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: configmaps, namespace: '{{NS}}'}
spec:
  targetGVK: {group: core, version: v1, kind: ConfigMap}
  attributes: [{name: version, path: '$.data.version'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: deployments, namespace: '{{NS}}'}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes:
  - {name: version, path: '$.spec.template.metadata.labels.version'}
  - {name: image, path: 'cel:object.spec.template.spec.containers[0].image'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: configmaps, namespace: '{{NS}}'}
spec:
  profileRef: configmaps
  namespaceSelector: {matchLabels: {loadtest: "yes"}}
  labelSelector: {matchLabels: {app: loadtest}}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: deployments, namespace: '{{NS}}'}
spec:
  profileRef: deployments
  namespaceSelector: {matchLabels: {loadtest: "yes"}}
  labelSelector: {matchLabels: {app: loadtest}}
---
apiVersion: v1
kind: Secret
metadata: {name: dsn, namespace: '{{NS}}'}
stringData: {dsn: '{{DSN}}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: git, namespace: '{{NS}}'}
spec:
  type: git
  endpoint: '{{REMOTE}}'
  layout: {mode: perResource, content: attributes}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: pg, namespace: '{{NS}}'}
spec:
  type: postgres
  postgres: {databaseRef: {name: dsn}, table: inventory_items}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: load, namespace: '{{NS}}'}
spec:
  snapshotSinkRefs: [git]
  databaseSinkRefs: [pg]`
