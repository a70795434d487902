//go:build integration

package controllers_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestFailingBindingsDoNotBlockOthers binds an inventory to a Git sink, to
// a Postgres sink whose DSN Secret is missing and to a MongoDB sink whose
// URI asks to read a file of the operator's: Git keeps exporting, the
// failing bindings and sinks say what to fix, and the inventory is
// PartiallySynced.
func TestFailingBindingsDoNotBlockOthers(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "partial.git")
	bareRepo(t, bare)
	apply(t, namespaceYAML("partial", "")+"---\n"+namespaceYAML("partial-apps", "team: partial")+"---\n"+deploymentYAML("partial-apps", "web", "shop", "web:1"))
	apply(t, strings.ReplaceAll(pipelineYAML("partial", bare), "team: shop", "team: partial")+`---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: warehouse, namespace: partial}
spec:
  type: postgres
  postgres: {databaseRef: {name: dsn}, table: inventory_items}
---
apiVersion: v1
kind: Secret
metadata: {name: mongo-uri, namespace: partial}
stringData: {uri: 'mongodb://db.example:27017/?tls=true&tlsCAFile=/var/run/secrets/kubernetes.io/serviceaccount/ca.crt'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: documents, namespace: partial}
spec:
  type: mongodb
  mongodb: {databaseRef: {name: mongo-uri}, database: inventory, collection: items}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: inventory, namespace: partial}
spec:
  snapshotSinkRefs: [git]
  databaseSinkRefs: [warehouse, documents]
`)
	eventually(t, 30*time.Second, "git exports while the database bindings fail", files(bare)("namespaces/partial-apps/deployment/web.yaml"))
	eventually(t, 20*time.Second, "the inventory is PartiallySynced and names the failing bindings", func() error {
		inv := get(t, "KollectInventory", "partial", "inventory")
		s, r, m := condition(inv, "Synced")
		if s != "False" || r != "PartiallySynced" || !strings.Contains(m, "database/warehouse: credentials Secret partial/dsn not found") ||
			!strings.Contains(m, "database/documents: the MongoDB URI option tlsCAFile is not allowed") {
			return fmt.Errorf("Synced=%s/%s: %s", s, r, m)
		}
		if s, r, _ := condition(inv, "Ready"); s != "True" || r != "PartiallySynced" {
			return fmt.Errorf("Ready=%s/%s", s, r)
		}
		exports, _, _ := unstructured.NestedSlice(inv.Object, "status", "sinkExports")
		if len(exports) != 3 {
			return fmt.Errorf("sinkExports %v", exports)
		}
		return nil
	})
	for name, want := range map[string][2]string{
		"warehouse": {"SecretResolveFailed", "credentials Secret partial/dsn not found"},
		"documents": {"ConnectionTestFailed", "the MongoDB URI option tlsCAFile is not allowed"},
	} {
		eventually(t, 20*time.Second, name+" says why its probe fails", func() error {
			s, r, m := condition(get(t, "KollectDatabaseSink", "partial", name), "ConnectionVerified")
			if s != "False" || r != want[0] || !strings.Contains(m, want[1]) {
				return fmt.Errorf("ConnectionVerified=%s/%s: %s", s, r, m)
			}
			return nil
		})
	}
}
