package cli

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/compile"
	"kollect.dev/kollect/pipeline/tools/manifests"
)

// fromContext names the "context" of a collection over files: the
// cluster of its rows unless the sink sets one.
const fromContext = "manifests"

// clusterScoped are the built-in kinds that live outside namespaces: a
// manifest of another kind without metadata.namespace is namespaced and
// put in --namespace (default "default"), as kubectl apply would.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"StorageClass": true, "CustomResourceDefinition": true, "PriorityClass": true, "IngressClass": true, "RuntimeClass": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true, "APIService": true, "CSIDriver": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

// collectFiles collects cfg's targets over the objects of manifest files
// instead of a cluster (--from): a GitOps repository or rendered charts
// read the way the operator reads a cluster, with the same selection,
// extraction and sinks, so declared and live state compare row by row.
// The files are served by client-go's in-memory dynamic client and
// discovery; a kind's resource is its guessed plural.
func (o collectOptions) collectFiles(ctx context.Context, cfg *Config, name, cluster string, log io.Writer) *contextRun {
	res := &contextRun{name: name, cluster: cluster, targets: len(cfg.Targets)}
	files, err := manifests.Files(o.from)
	if err != nil {
		res.err = err
		return res
	}
	ns := o.namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	var objs []runtime.Object // *unstructured.Unstructured
	kinds := map[schema.GroupVersionKind]bool{}
	for _, f := range files {
		read, err := manifests.ReadFile(f)
		if err != nil {
			res.err = fmt.Errorf("%s: %w", f, err)
			return res
		}
		for _, u := range read {
			gvk := u.GroupVersionKind()
			if gvk.Group == kollectv1alpha1.GroupVersion.Group {
				continue // Kollect's own objects are the pipeline, not what it reads
			}
			if u.GetNamespace() == "" && !clusterScoped[gvk.Kind] {
				u.SetNamespace(ns)
			}
			if u.GetUID() == "" {
				// Rows are keyed by UID: a manifest's is derived from what
				// names it, so the same file gives the same rows every run.
				sum := sha256.Sum256([]byte(gvk.GroupKind().String() + "/" + u.GetNamespace() + "/" + u.GetName()))
				u.SetUID(types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])))
			}
			kinds[gvk] = true
			objs = append(objs, u)
		}
	}
	// Every namespace an object names exists, unlabelled unless a file
	// declares it: selectors read namespaces.
	declared := map[string]bool{}
	seen := map[string]bool{}
	for _, obj := range objs {
		u := obj.(*unstructured.Unstructured)
		if u.GetKind() == "Namespace" && u.GetAPIVersion() == "v1" {
			declared[u.GetName()] = true
		} else if u.GetNamespace() != "" {
			seen[u.GetNamespace()] = true
		}
	}
	for name := range seen {
		if !declared[name] {
			objs = append(objs, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}})
		}
	}
	kinds[schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}] = true
	// The kinds the targets read are served even when no file holds one:
	// an empty list, not an unknown kind.
	for i := range cfg.Targets {
		if p := cfg.Profile(&cfg.Targets[i]); p != nil {
			if c, err := compile.Compile(&cfg.Targets[i], p, compile.Defaults{}); err == nil {
				for _, gvk := range c.GVKs() {
					kinds[gvk] = true
				}
			}
		}
	}
	listKinds := map[schema.GroupVersionResource]string{}
	byGV := map[string]*metav1.APIResourceList{}
	for gvk := range kinds {
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		listKinds[gvr] = gvk.Kind + "List"
		gv := gvk.GroupVersion().String()
		if byGV[gv] == nil {
			byGV[gv] = &metav1.APIResourceList{GroupVersion: gv}
		}
		byGV[gv].APIResources = append(byGV[gv].APIResources, metav1.APIResource{Name: gvr.Resource, Kind: gvk.Kind,
			Namespaced: !clusterScoped[gvk.Kind], Verbs: metav1.Verbs{"get", "list", "watch"}})
	}
	disco := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}
	for _, l := range byGV {
		disco.Resources = append(disco.Resources, l)
	}
	clk := clock.RealClock{}
	res.c = &collector{dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...),
		resolver: informers.NewResolver(disco), stderr: log, namespace: o.namespace, progress: newProgress(log, clk), clock: clk}
	res.collect(ctx, cfg, log)
	return res
}
