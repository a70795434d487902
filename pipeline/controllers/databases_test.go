//go:build integration

package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"kollect.dev/kollect/internal/servers/bqtest"
	"kollect.dev/kollect/internal/servers/mongotest"
)

// The fan-out's document and analytics databases: a FerretDB and the
// BigQuery fake, read back the way a portal would.

const (
	bqProject = "fleet-analytics"
	bqDataset = "inventory"
)

type databases struct {
	mongo *mongotest.Server
	docs  *mongo.Collection
	bq    *bqtest.Server
	bqKey []byte
}

func startDatabases(t *testing.T) *databases {
	d := &databases{mongo: mongotest.Start(t), bq: bqtest.Start(t)}
	d.docs = d.mongo.Client(t).Database("inventory").Collection("items")
	d.bq.CreateDataset(bqProject, bqDataset, "EU")
	d.bqKey = d.bq.ServiceAccount(bqProject, "kollect@fleet-analytics.iam.gserviceaccount.com")
	return d
}

// sinksYAML declares the two sinks and their Secrets in namespace ns.
func (d *databases) sinksYAML(ns string) string {
	key, _ := json.Marshal(string(d.bqKey))
	return fmt.Sprintf(`---
apiVersion: v1
kind: Secret
metadata: {name: mongo-uri, namespace: %[1]s}
stringData: {uri: '%[2]s'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: documents, namespace: %[1]s}
spec:
  type: mongodb
  cluster: test
  mongodb: {databaseRef: {name: mongo-uri}, database: inventory, collection: items}
---
apiVersion: v1
kind: Secret
metadata: {name: bigquery-key, namespace: %[1]s}
stringData: {credentials.json: %[3]s}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata:
  name: analytics
  namespace: %[1]s
  annotations: {kollect.dev/allow-plain-http-credentials: "true"}
spec:
  type: bigquery
  cluster: test
  endpoint: '%[4]s'
  bigquery: {project: %[5]s, dataset: %[6]s, table: inventory_items, location: EU, secretRef: {name: bigquery-key}}
`, ns, d.mongo.URI, key, d.bq.URL, bqProject, bqDataset)
}

// mongoImages reads the images MongoDB holds for an inventory.
func (d *databases) mongoImages(ctx context.Context, ns, inventory string) (images, error) {
	cur, err := d.docs.Find(ctx, bson.D{{Key: "inventory_namespace", Value: ns}, {Key: "inventory_name", Value: inventory}, {Key: "cluster", Value: "test"}})
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	out := images{}
	for cur.Next(ctx) {
		p := cur.Current.Lookup("payload")
		out[p.Document().Lookup("name").StringValue()] = p.Document().Lookup("attributes", "image").StringValue()
	}
	return out, cur.Err()
}

// bqImages reads the images BigQuery holds for an inventory.
func (d *databases) bqImages(ns, inventory string) (images, error) {
	out := images{}
	_, rs, ok := d.bq.Table(bqProject, bqDataset, "inventory_items")
	if !ok {
		return out, nil
	}
	for _, r := range rs {
		if r.Values["inventory_namespace"] != ns || r.Values["inventory_name"] != inventory || r.Values["cluster"] != "test" {
			continue
		}
		var row struct {
			Name       string
			Attributes struct{ Image string }
		}
		if err := json.Unmarshal([]byte(r.Values["payload"].(string)), &row); err != nil {
			return nil, err
		}
		out[row.Name] = row.Attributes.Image
	}
	return out, nil
}
