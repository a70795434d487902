//go:build integration

package mongodb_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"kollect.dev/kollect/internal/servers/mongotest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/mongodb"
)

func newSink(t testing.TB, cfg mongodb.Config) *mongodb.Sink {
	t.Helper()
	s, err := mongodb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func scopeFilter(id rows.Identity, cluster string) bson.D {
	return bson.D{{Key: "inventory_namespace", Value: id.Namespace}, {Key: "inventory_name", Value: id.Name}, {Key: "cluster", Value: cluster}}
}

// documents reads the scope's documents.
func documents(t testing.TB, coll *mongo.Collection, id rows.Identity, cluster string) []bson.Raw {
	t.Helper()
	ctx := context.Background()
	cur, err := coll.Find(ctx, scopeFilter(id, cluster), options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.Raw
	for cur.Next(ctx) {
		out = append(out, slices.Clone(cur.Current))
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMongoDBConformance(t *testing.T) {
	srv := mongotest.Start(t)
	coll := srv.Client(t).Database("inventory").Collection("items")
	sinktest.Run(t, sinktest.Harness{
		New: func(t *testing.T, cluster string) sinks.Backend {
			return newSink(t, mongodb.Config{URI: srv.URI, Database: "inventory", Collection: "items", Cluster: cluster, Batch: 16})
		},
		State: func(t *testing.T, id rows.Identity, cluster string) []string {
			var out []string
			for _, d := range documents(t, coll, id, cluster) {
				js, err := bson.MarshalExtJSON(d.Lookup("payload").Document(), false, false)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, string(js))
			}
			return out
		},
		Version: func(t *testing.T, id rows.Identity, cluster string) string {
			var out []string
			for _, d := range documents(t, coll, id, cluster) {
				out = append(out, d.Lookup("_id").StringValue()+"@"+d.Lookup("exported_at").Time().Format(time.RFC3339Nano))
			}
			return strings.Join(out, ",")
		},
		Stop: func(*testing.T) { srv.Stop() },
		Start: func(t *testing.T) {
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// TestDocumentsAsPortalsReadThem: one document per row, keyed by the
// cluster too, the row an embedded document with its numbers as numbers,
// and the unique index an ensure-mode sink creates.
func TestDocumentsAsPortalsReadThem(t *testing.T) {
	srv := mongotest.Start(t)
	ctx := context.Background()
	s := newSink(t, mongodb.Config{URI: srv.URI, Database: "inventory", Collection: "items", Cluster: "east"})
	r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "shop", TargetName: "deployments", Group: "apps", Version: "v1", Kind: "Deployment"}, Namespace: "", Name: "web", UID: "u-1"}, rows.AttributesOf(map[string]any{"replicas": int64(3), "ratio": 0.5,
		"images": []any{"web:1", "sidecar:2"}, "labels": map[string]any{"tier": "front"}, "paused": false, "owner": nil}))
	if err != nil {
		t.Fatal(err)
	}
	id := rows.Identity{Namespace: "shop", Name: "inventory"}
	if _, err := s.Export(ctx, rows.Diff(nil, sinktest.Snap(id, []*rows.Row{r}))); err != nil {
		t.Fatal(err)
	}
	coll := srv.Client(t).Database("inventory").Collection("items")
	docs := documents(t, coll, id, "east")
	if len(docs) != 1 {
		t.Fatalf("%d documents", len(docs))
	}
	d := docs[0]
	for field, want := range map[string]string{"_id": "east/shop/inventory/deployments/u-1", "inventory_namespace": "shop", "inventory_name": "inventory",
		"cluster": "east", "target_name": "deployments", "source_uid": "u-1", "resource_namespace": "shop", "payload_sha256": r.Sum()} {
		if got, ok := d.Lookup(field).StringValueOK(); !ok || got != want {
			t.Errorf("%s = %v, want %q", field, d.Lookup(field), want)
		}
	}
	if at, ok := d.Lookup("exported_at").TimeOK(); !ok || time.Since(at) > time.Minute {
		t.Errorf("exported_at = %v, want a recent date", d.Lookup("exported_at"))
	}
	p, ok := d.Lookup("payload").DocumentOK()
	if !ok {
		t.Fatalf("payload is %s, want an embedded document", d.Lookup("payload").Type)
	}
	if v := p.Lookup("attributes", "replicas"); v.Type != bson.TypeInt64 || v.Int64() != 3 {
		t.Errorf("attributes.replicas = %v (%s), want the integer 3", v, v.Type)
	}
	if v := p.Lookup("attributes", "ratio"); v.Type != bson.TypeDouble || v.Double() != 0.5 {
		t.Errorf("attributes.ratio = %v, want the double 0.5", v)
	}
	if v := p.Lookup("attributes", "images"); v.Type != bson.TypeArray {
		t.Errorf("attributes.images = %v, want an array", v)
	}
	if v := p.Lookup("attributes", "labels", "tier"); v.StringValue() != "front" {
		t.Errorf("attributes.labels.tier = %v", v)
	}
	if v := p.Lookup("attributes", "owner"); v.Type != bson.TypeNull {
		t.Errorf("attributes.owner = %v, want null", v)
	}
	// A portal queries rows by their attributes.
	n, err := coll.CountDocuments(ctx, bson.D{{Key: "payload.attributes.labels.tier", Value: "front"}, {Key: "cluster", Value: "east"}})
	if err != nil || n != 1 {
		t.Errorf("query on an attribute found %d documents (%v)", n, err)
	}

	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, spec := range specs {
		if spec.Name != "kollect_identity" {
			continue
		}
		found = true
		var keys bson.D
		if err := bson.Unmarshal(spec.KeysDocument, &keys); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, k := range keys {
			names = append(names, k.Key)
		}
		if !slices.Equal(names, mongodb.IdentityIndex) || spec.Unique == nil || !*spec.Unique {
			t.Errorf("index kollect_identity keys %v unique %v, want %v unique", names, spec.Unique, mongodb.IdentityIndex)
		}
	}
	if !found {
		t.Errorf("no kollect_identity index among %d", len(specs))
	}
}

// TestARowTheServerRefusesIsSetAside: FerretDB refuses keys with a '.'
// (as MongoDB before 5.0 does); that row is reported and kept out, the
// others are written, and the row goes through once it changes.
func TestARowTheServerRefusesIsSetAside(t *testing.T) {
	srv := mongotest.Start(t)
	ctx := context.Background()
	coll := srv.Client(t).Database("inventory").Collection("items")
	id := rows.Identity{Namespace: "default", Name: "labels"}
	labelled := func(key string) *rows.Row {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: "shop", Version: "v1", Kind: "Deployment"}, Namespace: "demo", Name: "app-0003", UID: "uid-0003"}, rows.AttributesOf(map[string]any{"labels": map[string]any{key: "shop"}}))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	base := sinktest.Rows(6, "1")
	bad := slices.Clone(base)
	bad[3] = labelled("app.kubernetes.io/name")
	b := &sinktest.Binding{Backend: newSink(t, mongodb.Config{URI: srv.URI, Database: "inventory", Collection: "items"})}
	ack, err := b.Export(ctx, sinktest.Snap(id, base))
	if err != nil || ack.Rows != 6 {
		t.Fatalf("first export: %d rows, %v", ack.Rows, err)
	}
	ack, err = b.Export(ctx, sinktest.Snap(id, bad))
	if err != nil {
		t.Fatal(err)
	}
	if len(ack.Rejected) != 1 || ack.Rejected[0].Key != "default/shop/uid-0003" || !strings.Contains(ack.Rejected[0].Reason, "app.kubernetes.io/name") {
		t.Fatalf("rejected %+v, want the labelled row with the server's reason", ack.Rejected)
	}
	if ack.Rows != 6 {
		t.Errorf("acknowledged %d rows, want 6 (the refused row keeps its previous version)", ack.Rows)
	}
	docs := documents(t, coll, id, "")
	if len(docs) != 6 || docs[3].Lookup("payload_sha256").StringValue() != base[3].Sum() {
		t.Fatalf("collection holds %d documents; the refused row's document should be its previous version", len(docs))
	}
	// A restart reconciles: the refused row is refused again, nothing else
	// is written.
	again := &sinktest.Binding{Backend: newSink(t, mongodb.Config{URI: srv.URI, Database: "inventory", Collection: "items"})}
	ack, err = again.Export(ctx, sinktest.Snap(id, bad))
	if err != nil || len(ack.Rejected) != 1 || ack.Written != 0 || ack.Rows != 6 {
		t.Fatalf("after a restart: wrote %d, rejected %d, holds %d (%v)", ack.Written, len(ack.Rejected), ack.Rows, err)
	}
	good := slices.Clone(bad)
	good[3] = labelled("app")
	ack, err = again.Export(ctx, sinktest.Snap(id, good))
	if err != nil || len(ack.Rejected) != 0 || ack.Written != 1 || ack.Rows != 6 {
		t.Fatalf("once storable: wrote %d, rejected %+v, holds %d (%v)", ack.Written, ack.Rejected, ack.Rows, err)
	}
	if got := documents(t, coll, id, "")[3].Lookup("payload", "attributes", "labels", "app").StringValue(); got != "shop" {
		t.Errorf("stored label %q", got)
	}
	// Deleting it (a row set aside before) is not mistaken for drift.
	ack, err = again.Export(ctx, sinktest.Snap(id, good[:3]))
	if err != nil || ack.Rows != 3 || len(documents(t, coll, id, "")) != 3 {
		t.Fatalf("delete: holds %d (%v)", ack.Rows, err)
	}
}

// TestHandEditsAreRepaired: documents deleted or edited behind the sink's
// back are noticed from the server's counts and the scope reconciled.
func TestHandEditsAreRepaired(t *testing.T) {
	srv := mongotest.Start(t)
	ctx := context.Background()
	coll := srv.Client(t).Database("inventory").Collection("items")
	id := rows.Identity{Namespace: "default", Name: "edited"}
	b := &sinktest.Binding{Backend: newSink(t, mongodb.Config{URI: srv.URI, Database: "inventory", Collection: "items"})}
	base := sinktest.Rows(20, "1")
	if _, err := b.Export(ctx, sinktest.Snap(id, base)); err != nil {
		t.Fatal(err)
	}
	for _, uid := range []string{"uid-0004", "uid-0011"} {
		if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: "/default/edited/shop/" + uid}}); err != nil {
			t.Fatal(err)
		}
	}
	// Only row 4 changes; the delta's upsert finds no document where the
	// sink wrote one, so the sink reconciles and restores row 11 as well.
	next := slices.Clone(base)
	next[4] = sinktest.Rows(5, "2")[4]
	ack, err := b.Export(ctx, sinktest.Snap(id, next))
	if err != nil {
		t.Fatal(err)
	}
	if ack.Rows != 20 || len(documents(t, coll, id, "")) != 20 {
		t.Fatalf("after the repair the sink acknowledged %d rows and the collection holds %d, want 20", ack.Rows, len(documents(t, coll, id, "")))
	}
}

// TestExistingModeNeedsTheCollection: provisioning.mode existing creates
// nothing and says what to do.
func TestExistingModeNeedsTheCollection(t *testing.T) {
	srv := mongotest.Start(t)
	ctx := context.Background()
	s := newSink(t, mongodb.Config{URI: srv.URI, Database: "inventory", Collection: "prepared", Existing: true})
	err := s.Probe(ctx)
	if !errors.Is(err, sinks.ErrPermanent) || !strings.Contains(err.Error(), "does not exist; provisioning.mode is existing") {
		t.Fatalf("probe of a missing collection: %v", err)
	}
	db := srv.Client(t).Database("inventory")
	if names, _ := db.ListCollectionNames(ctx, bson.D{}); slices.Contains(names, "prepared") {
		t.Fatal("mode existing created the collection")
	}
	if err := db.CreateCollection(ctx, "prepared"); err != nil {
		t.Fatal(err)
	}
	s = newSink(t, mongodb.Config{URI: srv.URI, Database: "inventory", Collection: "prepared", Existing: true})
	if err := s.Probe(ctx); err != nil {
		t.Fatalf("probe once the collection exists: %v", err)
	}
	if _, err := s.Export(ctx, rows.Diff(nil, sinktest.Snap(rows.Identity{Namespace: "a", Name: "b"}, sinktest.Rows(3, "1")))); err != nil {
		t.Fatal(err)
	}
}

// TestURIsThatReachBeyondTheSinkAreRefused: options that would read the
// operator's files, its cloud identity or dial past the endpoint guard.
func TestURIsThatReachBeyondTheSinkAreRefused(t *testing.T) {
	for _, tc := range []struct{ uri, want string }{
		{"mongodb://db.example:27017/?tls=true&tlsCAFile=/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", "option tlsCAFile is not allowed"},
		{"mongodb://db.example/?tlsCertificateKeyFile=/etc/key.pem", "option tlsCertificateKeyFile is not allowed"},
		{"mongodb://db.example/?authMechanism=MONGODB-AWS", "authMechanism MONGODB-AWS is not allowed"},
		{"mongodb://db.example/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:azure", "authMechanism MONGODB-OIDC is not allowed"},
		{"mongodb://db.example/?proxyHost=10.0.0.1&proxyPort=1080", "is not allowed"},
		{"https://db.example/", "must start with mongodb://"},
	} {
		_, err := mongodb.New(mongodb.Config{URI: tc.uri, Database: "d", Collection: "c"})
		if !errors.Is(err, sinks.ErrPermanent) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a permanent error saying %q", tc.uri, err, tc.want)
		}
	}
	if _, err := mongodb.New(mongodb.Config{URI: "mongodb://kollect:s3cr%2Fet@db.example/?authMechanism=SCRAM-SHA-256&authSource=admin", Database: "d", Collection: "c"}); err != nil {
		t.Errorf("a SCRAM URI: %v", err)
	}
}

// TestErrorsNeverQuoteThePassword: a server that cannot be reached is a
// retried error whose text carries no credential.
func TestErrorsNeverQuoteThePassword(t *testing.T) {
	const password = "pa55-w0rd-do-not-leak"
	s := newSink(t, mongodb.Config{URI: "mongodb://kollect:" + password + "@127.0.0.1:1/?serverSelectionTimeoutMS=300&connectTimeoutMS=300",
		Database: "d", Collection: "c"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.Probe(ctx)
	if err == nil || errors.Is(err, sinks.ErrPermanent) {
		t.Fatalf("probe of a closed port: %v, want a retried error", err)
	}
	if strings.Contains(err.Error(), password) {
		t.Fatalf("error quotes the password: %v", err)
	}
	if !strings.Contains(err.Error(), "no server reachable") {
		t.Errorf("error %q does not say the server is unreachable", err)
	}
}

func TestPayloadKeepsKeysLiterally(t *testing.T) {
	for _, tc := range []struct {
		json string
		want string // relaxed Extended JSON of the payload
	}{
		{`{"a":1,"b":{"$ref":"x","$id":2}}`, `{"a":{"$numberLong":"1"},"b":{"$ref":"x","$id":{"$numberLong":"2"}}}`},
		{`{"d":{"$date":"2020-01-01T00:00:00Z"}}`, `{"d":{"$date":"2020-01-01T00:00:00Z"}}`},
		{`{"big":12345678901234,"f":1.5,"e":1e300,"n":null,"t":true,"l":[]}`, `{"big":{"$numberLong":"12345678901234"},"f":{"$numberDouble":"1.5"},"e":{"$numberDouble":"1.0E+300"},"n":null,"t":true,"l":[]}`},
		{`{"z":"last","a":"first"}`, `{"z":"last","a":"first"}`},
	} {
		raw, err := mongodb.Payload([]byte(tc.json))
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		got, err := bson.MarshalExtJSON(raw, true, false)
		if err != nil {
			t.Fatal(err)
		}
		// Compare the canonical forms: key order and types both count.
		if string(got) != tc.want && !sameExt(t, got, tc.want) {
			t.Errorf("%s → %s, want %s", tc.json, got, tc.want)
		}
	}
	if _, err := mongodb.Payload([]byte(`{"a\u0000b":1}`)); err == nil {
		t.Error("a key with NUL was accepted")
	}
}

// sameExt compares two canonical Extended JSON texts by document.
func sameExt(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var a, b bson.D
	if err := bson.UnmarshalExtJSON(got, true, &a); err != nil {
		t.Fatal(err)
	}
	if err := bson.UnmarshalExtJSON([]byte(want), true, &b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}
