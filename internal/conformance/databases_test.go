//go:build conformance

package conformance_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/internal/servers/bqtest"
	"kollect.dev/kollect/internal/servers/mongotest"
	"kollect.dev/kollect/pipeline/backends"
)

// demoDatabaseSamples applies the upstream MongoDB and BigQuery sample
// sinks unchanged to the running demo, with their Secrets pointing at a
// FerretDB and at the BigQuery fake (through BIGQUERY_EMULATOR_HOST, as
// upstream reads it), and an inventory of the demo's shop Deployments
// bound to both: the probes pass, both databases hold the rows, keyed by
// the samples' cluster, and a Deployment created then deleted comes and
// goes in both. (It runs inside the demo: a test process runs one
// manager.)
func demoDatabaseSamples(t *testing.T, d *demo) {
	ctx, c := context.Background(), d.c
	ferret := mongotest.Start(t)
	bq := bqtest.Start(t)
	bq.CreateDataset("fleet-analytics", "inventory", "EU")
	t.Setenv(backends.EmulatorHost, bq.Addr()) // read when a sink's backend is built
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kollect-system", Name: "inventory-mongodb-uri"},
			StringData: map[string]string{"uri": ferret.URI + "inventory"}},
		// With an emulator the key is not used, as upstream.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kollect-system", Name: "inventory-bigquery-credentials"},
			StringData: map[string]string{"credentials.json": `{"type":"service_account","project_id":"fleet-analytics"}`}},
		&kollectv1alpha1.KollectInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "databases"},
			Spec: kollectv1alpha1.KollectInventorySpec{SinkRefs: kollectv1alpha1.SinkRefs{DatabaseSinkRefs: []kollectv1alpha1.InventorySinkRef{{Name: "mongodb-inventory-demo"}, {Name: "bigquery-inventory-demo"}}}}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"samples/advanced/kollect_v1alpha1_kollectdatabasesink_mongodb.yaml", "samples/advanced/kollect_v1alpha1_kollectdatabasesink_bigquery.yaml"} {
		docs, err := readDocs(filepath.Join(corpusDir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range docs {
			if err := c.Patch(ctx, doc, client.Apply, client.ForceOwnership, client.FieldOwner("conformance")); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
	}

	docs := ferret.Client(t).Database("inventory").Collection("inventory_items")
	inMongo := func() []string {
		cur, err := docs.Find(ctx, bson.D{{Key: "inventory_namespace", Value: "default"}, {Key: "inventory_name", Value: "databases"},
			{Key: "cluster", Value: "kind-kollect-dev"}, {Key: "target_name", Value: "shop-deployments"}})
		if err != nil {
			return nil
		}
		var out []string
		for cur.Next(ctx) {
			out = append(out, cur.Current.Lookup("payload", "name").StringValue())
		}
		slices.Sort(out)
		return out
	}
	inBigQuery := func() []string {
		_, rs, _ := bq.Table("fleet-analytics", "inventory", "inventory_items")
		var out []string
		for _, r := range rs {
			var row struct{ Name string }
			if r.Values["cluster"] == "kind-kollect-dev" && r.Values["inventory_name"] == "databases" && json.Unmarshal([]byte(r.Values["payload"].(string)), &row) == nil {
				out = append(out, row.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	if err := c.Create(ctx, shopDeployment("basket", "shop", "ghcr.io/example/basket:1.0.0")); err != nil {
		t.Fatal(err)
	}
	both := []string{"basket", "storefront"}
	waitUntil(t, 60*time.Second, "both sample sinks verified, both databases holding the shop Deployments", func() bool {
		for name, msg := range map[string]string{"mongodb-inventory-demo": "MongoDB ping succeeded",
			"bigquery-inventory-demo": "BigQuery dataset metadata and dry-run query succeeded"} {
			var s kollectv1alpha1.KollectDatabaseSink
			if c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &s) != nil {
				return false
			}
			v := meta.FindStatusCondition(s.Status.Conditions, "ConnectionVerified")
			if v == nil || v.Status != metav1.ConditionTrue || v.Message != msg {
				return false
			}
		}
		return slices.Equal(inMongo(), both) && slices.Equal(inBigQuery(), both)
	})
	if err := c.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "basket"}}); err != nil {
		t.Fatal(err)
	}
	// exportMinInterval (5m on the BigQuery sample) spaces re-exports of
	// unchanged data; a change is exported at once.
	waitUntil(t, 20*time.Second, "the deleted Deployment leaves both databases", func() bool {
		return slices.Equal(inMongo(), []string{"storefront"}) && slices.Equal(inBigQuery(), []string{"storefront"})
	})
}
