//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestProfileSeriesReachPrometheus: a profile's spec.metrics become
// kollect_custom_resource_series (and the labelled variant) that a real
// Prometheus scrapes; a profile without metrics gets a sum per numeric
// attribute; the series follow the rows, and go with their target.
func TestProfileSeriesReachPrometheus(t *testing.T) {
	ctx := context.Background()
	listen, log := startPrometheus(t)
	apply(t, namespaceYAML("series", "")+"---\n"+namespaceYAML("series-apps", "team: series")+"---\n"+
		deploymentYAML("series-apps", "web", "shop", "web:1")+"---\n"+deploymentYAML("series-apps", "web2", "shop", "web:1")+"---\n"+
		deploymentYAML("series-apps", "api", "shop", "api:2"))
	apply(t, `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: replicas, namespace: series}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes:
  - {name: image, path: '$.spec.template.spec.containers[0].image'}
  - {name: replicas, path: '$.spec.replicas'}
  metrics:
  - {name: replicas_total, path: replicas, labels: [image]}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: automatic, namespace: series}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes:
  - {name: image, path: '$.spec.template.spec.containers[0].image'}
  - {name: replicas, path: '$.spec.replicas'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: declared, namespace: series}
spec: {profileRef: replicas, namespaceSelector: {matchLabels: {team: series}}}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: automatic, namespace: series}
spec: {profileRef: automatic, namespaceSelector: {matchLabels: {team: series}}}
`)
	// series reads profile/series → value for the profiles of this test.
	series := func(q string, label string) (map[string]string, error) {
		samples, err := promQuery(listen, q)
		if err != nil {
			return nil, fmt.Errorf("%v (prometheus log: %s)", err, log)
		}
		out := map[string]string{}
		for _, s := range samples {
			out[s.Metric["profile"]+"/"+s.Metric["series"]+s.Metric[label]] = s.value()
		}
		return out, nil
	}
	expect := func(what, q, label string, want map[string]string) {
		t.Helper()
		eventually(t, 30*time.Second, what, func() error {
			got, err := series(q, label)
			if err != nil {
				return err
			}
			if !maps.Equal(got, want) {
				return fmt.Errorf("got %v, want %v", got, want)
			}
			return nil
		})
	}
	expect("the declared and automatic series", `kollect_custom_resource_series{gvk="apps/v1/Deployment",profile=~"replicas|automatic"}`, "",
		map[string]string{"replicas/object_count": "3", "replicas/replicas_total": "6", "automatic/object_count": "3", "automatic/replicas": "6"})
	expect("the labelled series, by image", `kollect_custom_resource_labeled_series{profile="replicas"}`, "image",
		map[string]string{"replicas/replicas_totalweb:1": "4", "replicas/replicas_totalapi:2": "2"})

	var d appsv1.Deployment
	if err := env.Client.Get(ctx, keyOf("series-apps", "api"), &d); err != nil {
		t.Fatal(err)
	}
	seven := int32(7)
	d.Spec.Replicas = &seven
	if err := env.Client.Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	expect("the series follow a change", `kollect_custom_resource_labeled_series{profile="replicas"}`, "image",
		map[string]string{"replicas/replicas_totalweb:1": "4", "replicas/replicas_totalapi:2": "7"})

	tgt := &unstructured.Unstructured{}
	tgt.SetAPIVersion("kollect.dev/v1alpha1")
	tgt.SetKind("KollectTarget")
	tgt.SetNamespace("series")
	tgt.SetName("declared")
	if err := env.Client.Delete(ctx, tgt); err != nil {
		t.Fatal(err)
	}
	expect("a deleted target's series go", `kollect_custom_resource_series{gvk="apps/v1/Deployment",profile=~"replicas|automatic"}`, "",
		map[string]string{"automatic/object_count": "3", "automatic/replicas": "11"})
}
