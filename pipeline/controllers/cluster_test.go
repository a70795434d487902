//go:build integration

package controllers_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestClusterTargetAndRollup(t *testing.T) {
	rollupRepo := filepath.Join(t.TempDir(), "rollup.git")
	teamRepo := filepath.Join(t.TempDir(), "team.git")
	bareRepo(t, rollupRepo)
	bareRepo(t, teamRepo)
	apply(t, namespaceYAML("kollect-system", "")+"---\n"+namespaceYAML("plat-a", "tenant: platform")+"---\n"+
		namespaceYAML("plat-b", "tenant: platform")+"---\n"+namespaceYAML("plat-c", "")+"---\n"+
		deploymentYAML("plat-a", "api", "web", "api:1")+"---\n"+deploymentYAML("plat-b", "ui", "web", "ui:1")+"---\n"+
		deploymentYAML("plat-c", "other", "web", "other:1"))
	apply(t, fmt.Sprintf(`apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: web, namespace: kollect-system}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes: [{name: image, path: '$.spec.template.spec.containers[0].image'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectClusterTarget
metadata: {name: platform-web}
spec:
  profileRef: {name: web, namespace: kollect-system}
  namespaceSelector: {matchLabels: {tenant: platform}}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: rollup-git, namespace: kollect-system}
spec: {type: git, endpoint: 'file://%s', serialization: {format: json}}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectClusterInventory
metadata: {name: rollup}
spec:
  targetRefs: [platform-web]
  namespaces: [plat-a, plat-b, plat-c]
  namespaceSelector: {matchLabels: {tenant: platform}}
  snapshotSinkRefs: [rollup-git]
  dedupe: byResourceUID
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: team-git, namespace: plat-a}
spec: {type: git, endpoint: 'file://%s', serialization: {format: json}}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: team, namespace: plat-a}
spec: {snapshotSinkRefs: [team-git]}
`, rollupRepo, teamRepo))

	document := func(repo, path string) (map[string]any, error) {
		out, err := git(repo, "show", "main:"+path)
		if err != nil {
			return nil, fmt.Errorf("%s: %s", path, out)
		}
		var env map[string]any
		return env, json.Unmarshal([]byte(out), &env)
	}
	items := func(env map[string]any) string {
		var out []string
		for _, it := range env["items"].([]any) {
			m := it.(map[string]any)
			out = append(out, fmt.Sprintf("%s/%s@%s/%s", m["namespace"], m["name"], m["targetNamespace"], m["targetName"]))
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	eventually(t, 30*time.Second, "the rollup holds the platform namespaces' rows", func() error {
		env, err := document(rollupRepo, "inventory/cluster/rollup.json")
		if err != nil {
			return err
		}
		if got := items(env); got != "plat-a/api@plat-a/platform-web,plat-b/ui@plat-b/platform-web" {
			return fmt.Errorf("items %s", got)
		}
		return nil
	})
	eventually(t, 20*time.Second, "a namespaced inventory also exports the cluster target's rows of its namespace", func() error {
		env, err := document(teamRepo, "inventory/plat-a/team.json")
		if err != nil {
			return err
		}
		if got := items(env); got != "plat-a/api@plat-a/platform-web" {
			return fmt.Errorf("items %s", got)
		}
		return nil
	})
	eventually(t, 20*time.Second, "cluster statuses report the rollup", func() error {
		ct := get(t, "KollectClusterTarget", "", "platform-web")
		if s, _, m := condition(ct, "Ready"); s != "True" || !strings.Contains(m, `in namespace "kollect-system" resolved`) || !strings.Contains(m, "collecting 2 resource(s)") {
			return fmt.Errorf("cluster target Ready=%s: %s", s, m)
		}
		ci := get(t, "KollectClusterInventory", "", "rollup")
		n, _, _ := unstructured.NestedInt64(ci.Object, "status", "itemCount")
		shards, _, _ := unstructured.NestedInt64(ci.Object, "status", "namespaceShardCount")
		targets, _, _ := unstructured.NestedInt64(ci.Object, "status", "targetCount")
		if s, r, m := condition(ci, "Ready"); s != "True" || r != "Exported" || n != 2 || shards != 2 || targets != 1 {
			return fmt.Errorf("cluster inventory Ready=%s/%s %s items=%d shards=%d targets=%d", s, r, m, n, shards, targets)
		}
		// Each shard carries its rows' fingerprint: 64 hex digits, one
		// per shard (each holds a different row).
		list, _, _ := unstructured.NestedSlice(ci.Object, "status", "namespaceShards")
		sums := map[string]bool{}
		for _, sh := range list {
			sum, _ := sh.(map[string]any)["checksum"].(string)
			if len(sum) != 64 {
				return fmt.Errorf("shard %v has no checksum", sh)
			}
			sums[sum] = true
		}
		if len(sums) != 2 {
			return fmt.Errorf("namespaceShards %v: want two distinct checksums", list)
		}
		return nil
	})

	// plat-c joins the platform: its row joins the rollup.
	apply(t, namespaceYAML("plat-c", "tenant: platform"))
	eventually(t, 30*time.Second, "a namespace that starts matching joins the rollup", func() error {
		env, err := document(rollupRepo, "inventory/cluster/rollup.json")
		if err != nil {
			return err
		}
		if got := items(env); !strings.Contains(got, "plat-c/other@plat-c/platform-web") {
			return fmt.Errorf("items %s", got)
		}
		return nil
	})
}
