//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/internal/servers/pgtest"
)

// One row PostgreSQL cannot store (a NUL in a ConfigMap value) is set
// aside: the other rows land, sinkExports[] counts and names it, and a
// Warning event says what happened.
func TestARefusedRowIsReportedAndTheRestExported(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.Start(t)
	apply(t, namespaceYAML("refused", ""))
	for name, v := range map[string]string{"fine": "ok", "nul": "a\x00b"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "refused", Name: name, Labels: map[string]string{"app": "refused"}},
			Data: map[string]string{"v": v}}
		if err := env.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	apply(t, fmt.Sprintf(`apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: cms, namespace: refused}
spec:
  targetGVK: {group: core, version: v1, kind: ConfigMap}
  attributes: [{name: v, path: '$.data.v'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: cms, namespace: refused}
spec:
  profileRef: cms
  labelSelector: {matchLabels: {app: refused}}
---
apiVersion: v1
kind: Secret
metadata: {name: dsn, namespace: refused}
stringData: {dsn: '%s'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: pg, namespace: refused}
spec:
  type: postgres
  postgres: {databaseRef: {name: dsn}, table: refused_items}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: inventory, namespace: refused}
spec:
  databaseSinkRefs: [pg]
`, pg.DSN("")))
	eventually(t, 30*time.Second, "sinkExports counts and names the refused row", func() error {
		inv := get(t, "KollectInventory", "refused", "inventory")
		exports, _, _ := unstructuredSlice(inv.Object, "status", "sinkExports")
		if len(exports) != 1 {
			return fmt.Errorf("sinkExports: %v", exports)
		}
		e := exports[0].(map[string]any)
		keys := fmt.Sprint(e["rejectedKeys"])
		if fmt.Sprint(e["rejectedCount"]) != "1" || !strings.Contains(fmt.Sprint(e["rejectedReason"]), "NUL") || !strings.HasPrefix(keys, "[refused/cms/") {
			return fmt.Errorf("sinkExports[0] = %v", e)
		}
		if fmt.Sprint(e["exportedCount"]) != "1" {
			return fmt.Errorf("want the other row exported, exportedCount = %v", e["exportedCount"])
		}
		return nil
	})
	eventually(t, 20*time.Second, "a Warning event names the refused row", func() error {
		var list eventsv1.EventList
		if err := env.Client.List(ctx, &list, client.InNamespace("refused")); err != nil {
			return err
		}
		for _, ev := range list.Items {
			if ev.Reason == "RowsRejected" && ev.Type == corev1.EventTypeWarning && ev.Regarding.Name == "inventory" && strings.Contains(ev.Note, "database/pg") {
				return nil
			}
		}
		return fmt.Errorf("no RowsRejected event among %d", len(list.Items))
	})
}

func unstructuredSlice(obj map[string]any, fields ...string) ([]any, bool, error) {
	cur := any(obj)
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		cur = m[f]
	}
	s, ok := cur.([]any)
	return s, ok, nil
}
