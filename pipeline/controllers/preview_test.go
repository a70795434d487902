//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestPreviewRendersOnRequestAndOnlyWhenItChanges: the kollect.dev/preview
// annotation renders status.preview from the synthetic inventory team-a/api;
// another reconcile with the same content keeps
// renderedAt, and removing the annotation clears the preview.
func TestPreviewRendersOnRequestAndOnlyWhenItChanges(t *testing.T) {
	apply(t, namespaceYAML("preview", "")+`---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: git, namespace: preview, annotations: {kollect.dev/preview: "true"}}
spec:
  type: git
  endpoint: https://git.example.com/inventory.git
  connectionTest: false
  cluster: east
  layout: {mode: perResource, content: attributes, pathTemplate: '{cluster}/{sourceNamespace}/{kind}/{sourceName}{extension}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: pg, namespace: preview, annotations: {kollect.dev/preview: "True"}}
spec:
  type: postgres
  connectionTest: false
  postgres: {databaseRef: {name: dsn}, table: inventory_items}
`)
	var renderedAt string
	eventually(t, 30*time.Second, "the Git sink's preview", func() error {
		u := get(t, "KollectSnapshotSink", "preview", "git")
		p, _, _ := unstructured.NestedMap(u.Object, "status", "preview")
		paths, _, _ := unstructured.NestedStringSlice(p, "layout", "samplePaths")
		subject, _, _ := unstructured.NestedString(p, "git", "sampleCommitSubject")
		renderedAt, _, _ = unstructured.NestedString(p, "renderedAt")
		if p["objectPath"] != "east/team-a/deployment/api.yaml" || len(paths) != 1 || p["inputSampleSource"] != "synthetic" ||
			!strings.HasPrefix(subject, "chore(east/team-a/api): export 1 items @ ") || renderedAt == "" {
			return fmt.Errorf("preview %v", p)
		}
		return nil
	})
	eventually(t, 30*time.Second, "the Postgres sink's preview", func() error {
		ddl, _, _ := unstructured.NestedString(get(t, "KollectDatabaseSink", "preview", "pg").Object, "status", "preview", "postgres", "expectedDDL")
		if !strings.Contains(ddl, `CREATE TABLE IF NOT EXISTS "public"."inventory_items"`) {
			return fmt.Errorf("expectedDDL %q", ddl)
		}
		return nil
	})
	patch := func(annotations map[string]any) {
		u := get(t, "KollectSnapshotSink", "preview", "git")
		base := u.DeepCopy()
		u.SetAnnotations(nil)
		_ = unstructured.SetNestedField(u.Object, annotations, "metadata", "annotations")
		if err := env.Client.Patch(context.Background(), u, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	// Another annotation reconciles the sink; the content is the same.
	patch(map[string]any{"kollect.dev/preview": "true", "team": "platform"})
	time.Sleep(2 * time.Second)
	if at, _, _ := unstructured.NestedString(get(t, "KollectSnapshotSink", "preview", "git").Object, "status", "preview", "renderedAt"); at != renderedAt {
		t.Fatalf("renderedAt moved from %s to %s without a change", renderedAt, at)
	}
	patch(map[string]any{"kollect.dev/preview": nil})
	eventually(t, 30*time.Second, "the preview is cleared", func() error {
		if p, found, _ := unstructured.NestedMap(get(t, "KollectSnapshotSink", "preview", "git").Object, "status", "preview"); found {
			return fmt.Errorf("preview still %v", p)
		}
		return nil
	})
}
