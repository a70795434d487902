//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tenantYAML is a tenant's pipeline of ConfigMaps under a scope that
// allows its own namespace, ConfigMaps and the sink "git" only.
func tenantYAML(ns, remote string) string {
	return fmt.Sprintf(`apiVersion: kollect.dev/v1alpha1
kind: KollectScope
metadata: {name: a-scope, namespace: %[1]s}
spec:
  allowedGVKs: [{group: "", version: v1, kind: ConfigMap}]
  allowedNamespaces: [%[1]s]
  snapshotSinkRefs: [git]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: configmaps, namespace: %[1]s}
spec:
  targetGVK: {group: "", version: v1, kind: ConfigMap}
  attributes: [{name: colour, path: '$.data.colour', optional: true}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: own, namespace: %[1]s}
spec:
  profileRef: configmaps
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %[1]s}}
  labelSelector: {matchLabels: {app: tenancy}}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: git, namespace: %[1]s}
spec:
  type: git
  endpoint: file://%[2]s
  serialization: {format: yaml}
  layout: {mode: perResource, content: attributes, pathTemplate: '{sourceNamespace}/{sourceName}{extension}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: inventory, namespace: %[1]s}
spec:
  snapshotSinkRefs: [git]
`, ns, remote)
}

func configMapYAML(ns, name, colour string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, labels: {app: tenancy}}\ndata: {colour: %s}\n", name, ns, colour)
}

// degraded waits for a Degraded condition with reason and words.
func degraded(t *testing.T, kind, ns, name, reason, words string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("%s %s is Degraded/%s", kind, name, reason), func() error {
		s, r, m := condition(get(t, kind, ns, name), "Degraded")
		if s != "True" || r != reason || !strings.Contains(m, words) {
			return fmt.Errorf("Degraded=%s/%s: %s", s, r, m)
		}
		return nil
	})
}

// event waits for an event of type and reason about an object.
func event(t *testing.T, ns, name, typ, reason string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("a %s event %s about %s", typ, reason, name), func() error {
		var list eventsv1.EventList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Type == typ && e.Reason == reason {
				return nil
			}
			seen = append(seen, e.Regarding.Name+":"+e.Type+"/"+e.Reason)
		}
		return fmt.Errorf("events: %v", seen)
	})
}

// TestScopesHoldAtRuntime runs a tenant's pipeline with the webhooks off,
// since scopes must hold without admission too: what its KollectScope
// forbids degrades the object with the spec's reason and a Warning event,
// collects and exports nothing, and leaves what the sink holds alone; a
// scope change takes effect without a restart.
func TestScopesHoldAtRuntime(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "tenant.git")
	bareRepo(t, bare)
	apply(t, namespaceYAML("tenant-a", "")+"---\n"+namespaceYAML("tenant-b", "")+"---\n"+
		configMapYAML("tenant-a", "mine", "blue")+"---\n"+configMapYAML("tenant-b", "theirs", "red"))
	apply(t, tenantYAML("tenant-a", bare))
	want := files(bare)
	eventually(t, 30*time.Second, "the tenant's own ConfigMap is exported", want("tenant-a/mine.yaml"))

	// A target reading another team's namespace.
	apply(t, `apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: other-team, namespace: tenant-a}
spec:
  profileRef: configmaps
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: tenant-b}}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: everywhere, namespace: tenant-a}
spec:
  profileRef: configmaps
---
apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: deployments, namespace: tenant-a}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes: [{name: replicas, path: '$.spec.replicas'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: wrong-kind, namespace: tenant-a}
spec:
  profileRef: deployments
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: tenant-a}}
`)
	degraded(t, "KollectTarget", "tenant-a", "other-team", "ScopeNamespaceDenied", `workload namespace "tenant-b" is not in KollectScope "a-scope" allowedNamespaces`)
	degraded(t, "KollectTarget", "tenant-a", "everywhere", "ScopeNamespaceDenied", "allowedNamespaces")
	degraded(t, "KollectTarget", "tenant-a", "wrong-kind", "ScopeGVKDenied", `apps/v1/Deployment is not in KollectScope "a-scope" allowedGVKs`)
	event(t, "tenant-a", "other-team", "Warning", "ScopeNamespaceDenied")
	event(t, "tenant-a", "wrong-kind", "Warning", "ScopeGVKDenied")

	// An inventory bound to a sink the scope does not list, and a sink
	// borrowing the platform's credentials.
	apply(t, namespaceYAML("tenancy-platform", "")+`---
apiVersion: v1
kind: Secret
metadata: {name: platform-token, namespace: tenancy-platform}
stringData: {token: not-for-tenants}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: borrowed, namespace: tenant-a}
spec:
  type: git
  endpoint: file://`+bare+`
  secretRef: {name: platform-token, namespace: tenancy-platform}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: leak, namespace: tenant-a}
spec:
  snapshotSinkRefs: [borrowed]
`)
	degraded(t, "KollectInventory", "tenant-a", "leak", "ScopeSinkDenied", `sink "borrowed" (snapshotSinkRefs) is not in KollectScope "a-scope" snapshotSinkRefs`)
	eventually(t, 30*time.Second, "the borrowing sink cannot read the platform's Secret", func() error {
		s, r, m := condition(get(t, "KollectSnapshotSink", "tenant-a", "borrowed"), "ConnectionVerified")
		if s != "False" || r != "SecretResolveFailed" || !strings.Contains(m, "allowedSecretNamespaces") || strings.Contains(m, "not-for-tenants") {
			return fmt.Errorf("ConnectionVerified=%s/%s: %s", s, r, m)
		}
		return nil
	})
	event(t, "tenant-a", "borrowed", "Warning", "SecretResolveFailed")

	// A profile exporting Secret data without the opt-in.
	apply(t, `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: secrets, namespace: tenancy-platform}
spec:
  targetGVK: {group: "", version: v1, kind: Secret}
  attributes: [{name: password, path: '$.data.password'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: secrets, namespace: tenancy-platform}
spec:
  profileRef: secrets
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: tenancy-platform}}
`)
	degraded(t, "KollectTarget", "tenancy-platform", "secrets", "ExtractionFailed", "kollect.dev/allow-secret-extraction")

	// Nothing of tenant-b reached the tenant's repository, and nothing was
	// deleted from it while the violations stood.
	if err := want("tenant-a/mine.yaml")(); err != nil {
		t.Fatal(err)
	}
	log, err := git(bare, "log", "--format=%s", "--name-status", "main")
	if err != nil || strings.Contains(log, "tenant-b") || strings.Contains(log, "\nD\t") {
		t.Fatalf("history (err %v):\n%s", err, log)
	}

	// Widening the scope re-evaluates its targets without a restart.
	apply(t, `apiVersion: kollect.dev/v1alpha1
kind: KollectScope
metadata: {name: a-scope, namespace: tenant-a}
spec:
  allowedGVKs: [{group: "", version: v1, kind: ConfigMap}]
  allowedNamespaces: [tenant-a, tenant-b]
  snapshotSinkRefs: [git]
`)
	eventually(t, 30*time.Second, "the target of tenant-b recovers", func() error {
		if s, r, m := condition(get(t, "KollectTarget", "tenant-a", "other-team"), "Ready"); s != "True" {
			return fmt.Errorf("Ready=%s/%s: %s", s, r, m)
		}
		return nil
	})
	event(t, "tenant-a", "other-team", "Normal", "Recovered")
}
