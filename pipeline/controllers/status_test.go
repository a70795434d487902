//go:build integration

package controllers_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Status follows the cluster as it changes, not on a timer: a namespace
// that starts (or stops) matching a target's selector shows in its
// matchedNamespaces, and a new object in its count, within seconds, while
// the periodic resync is a minute.
func TestTargetStatusFollowsNamespacesAndCountsAsEvents(t *testing.T) {
	apply(t, namespaceYAML("evs", "")+"---\n"+namespaceYAML("evs-a", "team: evs")+"---\n"+deploymentYAML("evs-a", "web", "web", "web:1")+`---
apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: deployments, namespace: evs}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes: [{name: image, path: '$.spec.template.spec.containers[0].image'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: team, namespace: evs}
spec:
  profileRef: deployments
  namespaceSelector: {matchLabels: {team: evs}}
`)
	state := func(want []string, count int64) func() error {
		return func() error {
			u := get(t, "KollectTarget", "evs", "team")
			matched, _, _ := unstructured.NestedStringSlice(u.Object, "status", "matchedNamespaces")
			n, _, _ := unstructured.NestedInt64(u.Object, "status", "collectedCount")
			if !slices.Equal(matched, want) || n != count {
				return fmt.Errorf("matchedNamespaces %v, collectedCount %d; want %v, %d", matched, n, want, count)
			}
			return nil
		}
	}
	eventually(t, 20*time.Second, "the target reports its first namespace and object", state([]string{"evs-a"}, 1))
	start := time.Now()
	apply(t, namespaceYAML("evs-b", "team: evs")+"---\n"+deploymentYAML("evs-b", "api", "api", "api:1"))
	eventually(t, 15*time.Second, "a new matching namespace and its object show in status", state([]string{"evs-a", "evs-b"}, 2))
	apply(t, namespaceYAML("evs-a", "team: other"))
	eventually(t, 15*time.Second, "a namespace that stops matching leaves status", state([]string{"evs-b"}, 1))
	t.Logf("namespace changes reached status in %s (the resync is 60s)", time.Since(start).Round(time.Millisecond))
}
