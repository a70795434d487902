//go:build conformance

package conformance_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/internal/servers/pgtest"
)

// demoGitPostgres runs samples/demo/git-postgres as its README means it: a
// patch over the running git-only demo's inventory (applied here as a
// second server-side apply field manager, which merges the same way), so
// the inventory exports to Git and to a real PostgreSQL. The DSN Secret the
// sample names points at a local server.
func demoGitPostgres(t *testing.T, d *demo) {
	pg := pgtest.Start(t)
	ctx, c := context.Background(), d.c
	{
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kollect-system"}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kollect-system", Name: "inventory-postgres-dsn"},
			StringData: map[string]string{"dsn": pg.DSN("")}}); err != nil {
			t.Fatal(err)
		}
		// The sample's sink lives in default and names a Secret of
		// kollect-system: a sink reads another namespace's Secrets only
		// when the scope of its own namespace allows it, which the
		// platform team grants here.
		var grants kollectv1alpha1.KollectScope
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "platform-grants"}, &grants); err != nil {
			t.Fatal(err)
		}
		grants.Spec.AllowedSecretNamespaces = []string{"kollect-system"}
		if err := c.Update(ctx, &grants); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"databasesink.yaml", "inventory.yaml"} {
			docs, err := readDocs(filepath.Join(corpusDir, "samples/demo/git-postgres", f))
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range docs {
				if err := c.Patch(ctx, doc, client.Apply, client.ForceOwnership, client.FieldOwner("conformance-git-postgres")); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
			}
		}
	}

	rowsInPostgres := func() (string, error) {
		conn, err := pgx.Connect(ctx, pg.DSN(""))
		if err != nil {
			return "", err
		}
		defer conn.Close(ctx)
		rs, err := conn.Query(ctx, `SELECT resource_namespace || '/' || (payload->>'name') || '=' || (payload->'attributes'->>'image')
FROM public.inventory_items WHERE inventory_namespace = 'default' AND inventory_name = 'demo-inventory'
  AND target_name = 'shop-deployments' AND cluster = 'kollect-hero' ORDER BY 1`)
		if err != nil {
			return "", err
		}
		got, err := pgx.CollectRows(rs, pgx.RowTo[string])
		return strings.Join(got, ","), err
	}
	// The git-only stage left storefront (cart deleted) and added api.
	want := "demo/api=ghcr.io/example/api:3.0.0,demo/storefront=ghcr.io/example/storefront:1.4.2"
	waitUntil(t, 30*time.Second, "the shop Deployments land in Postgres as they are in Git", func() bool {
		got, _ := rowsInPostgres()
		return got == want && d.files() == "namespaces/demo/deployment/api.yaml\nnamespaces/demo/deployment/storefront.yaml"
	})
	conn, err := pgx.Connect(ctx, pg.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	var pk string
	if err := conn.QueryRow(ctx, `SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM pg_index i
JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = 'public.inventory_items'::regclass AND i.indisprimary`).Scan(&pk); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if pk != "inventory_namespace,inventory_name,cluster,target_name,source_uid" {
		t.Errorf("primary key (%s) must include the cluster", pk)
	}

	if err := d.c.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "api"}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "the deleted Deployment leaves Git and Postgres", func() bool {
		got, _ := rowsInPostgres()
		return got == "demo/storefront=ghcr.io/example/storefront:1.4.2" && d.files() == "namespaces/demo/deployment/storefront.yaml"
	})
	waitUntil(t, 20*time.Second, "the inventory and the database sink report what Postgres acknowledged", func() bool {
		var inv kollectv1alpha1.KollectInventory
		var sink kollectv1alpha1.KollectDatabaseSink
		if d.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo-inventory"}, &inv) != nil ||
			d.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "hero-postgres-sink"}, &sink) != nil {
			return false
		}
		got := map[string]string{}
		for _, e := range inv.Status.SinkExports {
			if e.ExportedCount != nil {
				got[e.Name] = fmt.Sprint(*e.ExportedCount)
			}
		}
		verified := meta.FindStatusCondition(sink.Status.Conditions, "ConnectionVerified")
		ready := meta.FindStatusCondition(inv.Status.Conditions, "Ready")
		return got["snapshot/hero-git-sink"] == "1" && got["database/hero-postgres-sink"] == "1" && len(got) == 2 &&
			verified != nil && verified.Status == metav1.ConditionTrue && verified.Message == "PostgreSQL ping succeeded" &&
			ready != nil && ready.Reason == "Exported"
	})
}
