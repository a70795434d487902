package controllers_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestUnimplementedSinkTypesFailVisiblyWithoutBlockingOthers binds an
// inventory to a Git sink and to a Postgres sink (whose backend is not
// implemented yet): Git keeps exporting, the Postgres binding and sink say
// why they fail, and the inventory is PartiallySynced.
func TestUnimplementedSinkTypesFailVisiblyWithoutBlockingOthers(t *testing.T) {
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
apiVersion: kollect.dev/v1alpha1
kind: KollectEventSink
metadata: {name: bus, namespace: partial}
spec:
  type: nats
  nats: {url: 'nats://nats.example:4222', subject: inventory.events}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: inventory, namespace: partial}
spec:
  snapshotSinkRefs: [git]
  databaseSinkRefs: [warehouse]
`)
	eventually(t, 30*time.Second, "git exports while the database binding fails", files(bare)("namespaces/partial-apps/deployment/web.yaml"))
	eventually(t, 20*time.Second, "the inventory is PartiallySynced and names the failing binding", func() error {
		inv := get(t, "KollectInventory", "partial", "inventory")
		if s, r, m := condition(inv, "Synced"); s != "False" || r != "PartiallySynced" || !strings.Contains(m, "database/warehouse: postgres sinks are not implemented") {
			return fmt.Errorf("Synced=%s/%s: %s", s, r, m)
		}
		if s, r, _ := condition(inv, "Ready"); s != "True" || r != "PartiallySynced" {
			return fmt.Errorf("Ready=%s/%s", s, r)
		}
		exports, _, _ := unstructured.NestedSlice(inv.Object, "status", "sinkExports")
		if len(exports) != 2 {
			return fmt.Errorf("sinkExports %v", exports)
		}
		return nil
	})
	for _, kind := range []string{"KollectDatabaseSink", "KollectEventSink"} {
		name := map[string]string{"KollectDatabaseSink": "warehouse", "KollectEventSink": "bus"}[kind]
		eventually(t, 20*time.Second, kind+" reports that its type is not implemented", func() error {
			s, r, m := condition(get(t, kind, "partial", name), "ConnectionVerified")
			if s != "False" || r != "ConnectionTestFailed" || !strings.Contains(m, "not implemented") {
				return fmt.Errorf("ConnectionVerified=%s/%s: %s", s, r, m)
			}
			return nil
		})
	}
}
