package faults

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"sigs.k8s.io/yaml"
)

// The names the rig gives the five backends beside Git, PostgreSQL, S3,
// NATS and Kafka.
const (
	labProject = "platform/faults"
	bqProject  = "faults-analytics"
	bqDataset  = "inventory"
)

// rowOf reads a row's name and version attribute from its JSON.
func rowOf(body []byte) (name, version string, err error) {
	var row struct {
		Name       string
		Attributes struct{ Version string }
	}
	if err := json.Unmarshal(body, &row); err != nil {
		return "", "", err
	}
	return row.Name, row.Attributes.Version, nil
}

// gcsState reads every object under the inventory's prefix, as a reader
// of the prefix would (an orphan is an extra row); version sums their
// generations.
func (r *rig) gcsState() (state, string, error) {
	objs, err := r.gcs.Objects(bucket, "inventory/"+r.ns+"/")
	if err != nil {
		return nil, "", err
	}
	got := state{}
	var total int64
	for key, o := range objs {
		n, v, err := rowOf(o.Content)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", key, err)
		}
		got.add(n, v)
		total += o.Generation
	}
	return got, fmt.Sprint(len(objs), "/", total), nil
}

// azureState reads every document under the inventory's prefix (one, or
// its parts when the export was split by the size ceiling), as a reader of
// the prefix would: a stale part is an extra or duplicated row. version
// joins their ETags.
func (r *rig) azureState(ctx context.Context) (state, string, error) {
	c, err := r.az.Client()
	if err != nil {
		return nil, "", err
	}
	prefix := "inventory/" + r.ns + "/"
	got := state{}
	var etags []string
	pager := c.NewListBlobsFlatPager(bucket, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, "", err
		}
		for _, b := range page.Segment.BlobItems {
			if !strings.HasPrefix(*b.Name, prefix) {
				continue
			}
			resp, err := c.DownloadStream(ctx, bucket, *b.Name, nil)
			if err != nil {
				return nil, "", err
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return nil, "", err
			}
			var doc struct{ Items []json.RawMessage }
			if err := json.Unmarshal(body, &doc); err != nil {
				return nil, "", fmt.Errorf("%s: %w", *b.Name, err)
			}
			for _, it := range doc.Items {
				n, v, err := rowOf(it)
				if err != nil {
					return nil, "", err
				}
				got.add(n, v)
			}
			etags = append(etags, *b.Name+"@"+string(*resp.ETag))
		}
	}
	slices.Sort(etags)
	return got, strings.Join(etags, ","), nil
}

// labState reads every file of the GitLab project's branch but the
// sink's records; version is its number of commits.
func (r *rig) labState() (state, string, error) {
	got := state{}
	for p, body := range r.lab.Files(labProject, "main") {
		if strings.HasPrefix(p, ".kollect/") {
			continue
		}
		var attrs struct{ Version string }
		if err := yaml.Unmarshal(body, &attrs); err != nil {
			return nil, "", fmt.Errorf("%s: %w", p, err)
		}
		n := strings.TrimSuffix(path.Base(p), path.Ext(p))
		got.add(n, attrs.Version)
	}
	return got, fmt.Sprint(len(r.lab.Commits(labProject, "main"))), nil
}

// mongoState reads the inventory's documents; version is the latest
// exported_at, which every write of a document sets.
func (r *rig) mongoState(ctx context.Context) (state, string, error) {
	c, err := mongo.Connect(options.Client().ApplyURI(r.mongo.URI).SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		return nil, "", err
	}
	defer func() { _ = c.Disconnect(ctx) }()
	cur, err := c.Database("inventory").Collection("items").Find(ctx, bson.D{{Key: "inventory_namespace", Value: r.ns}, {Key: "inventory_name", Value: "inventory"}})
	if err != nil {
		return nil, "", err
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		return nil, "", err
	}
	got, latest := state{}, ""
	for _, d := range docs {
		raw, err := bson.MarshalExtJSON(d["payload"], false, false)
		if err != nil {
			return nil, "", err
		}
		n, v, err := rowOf(raw)
		if err != nil {
			return nil, "", err
		}
		got.add(n, v)
		latest = max(latest, fmt.Sprint(d["exported_at"]))
	}
	return got, latest, nil
}

// bqState reads the inventory's rows of the BigQuery table; version hashes
// their row versions, which the server changes on every write.
func (r *rig) bqState() (state, string, error) {
	_, rs, ok := r.bq.Table(bqProject, bqDataset, "inventory_items")
	got := state{}
	if !ok {
		return got, "", nil
	}
	var versions []string
	for _, row := range rs {
		if row.Values["inventory_namespace"] != r.ns || row.Values["inventory_name"] != "inventory" {
			continue
		}
		body, _ := row.Values["payload"].(string)
		n, v, err := rowOf([]byte(body))
		if err != nil {
			return nil, "", err
		}
		got.add(n, v)
		versions = append(versions, fmt.Sprint(row.Version))
	}
	slices.Sort(versions)
	sum := sha256.Sum256([]byte(strings.Join(versions, ",")))
	return got, hex.EncodeToString(sum[:8]), nil
}

// readFive reads the five backends into h: their states, and in
// h.versions what changes whenever each writes.
func (r *rig) readFive(ctx context.Context, h *history) error {
	h.versions = map[string]string{}
	var err error
	var v string
	if h.gcs, v, err = r.gcsState(); err != nil {
		return fmt.Errorf("gcs: %w", err)
	}
	h.versions["gcs"] = v
	if h.azure, v, err = r.azureState(ctx); err != nil {
		return fmt.Errorf("azure: %w", err)
	}
	h.versions["azure"] = v
	if h.gitlab, v, err = r.labState(); err != nil {
		return fmt.Errorf("gitlab: %w", err)
	}
	h.versions["gitlab"] = v
	if h.mongo, v, err = r.mongoState(ctx); err != nil {
		return fmt.Errorf("mongodb: %w", err)
	}
	h.versions["mongodb"] = v
	if h.bigquery, v, err = r.bqState(); err != nil {
		return fmt.Errorf("bigquery: %w", err)
	}
	h.versions["bigquery"] = v
	return nil
}

// rewrote names the backends whose version changed from before to after.
func rewrote(before, after *history) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(after.versions)) {
		if before.versions[k] != after.versions[k] {
			out = append(out, k)
		}
	}
	return out
}

// labDeletes counts the row files the GitLab project's commits deleted
// (its records aside): no commit may delete a row whose object exists.
func (r *rig) labDeletes() int {
	n := 0
	for _, c := range r.lab.Commits(labProject, "main") {
		for _, a := range c.Actions {
			if strings.HasPrefix(a, "delete ") && !strings.HasPrefix(a, "delete .kollect/") {
				n++
			}
		}
	}
	return n
}

// nothingDeleted fails the test when any sink's history deleted a row:
// a delete message on either stream, a row file deleted by a GitLab
// commit, a PostgreSQL DELETE. The scenarios that call it delete no
// object.
func (r *rig) nothingDeleted(ctx context.Context, h *history) {
	r.t.Helper()
	if d := deletes(h.nats) + deletes(h.kafka); d != 0 {
		r.t.Fatalf("%d delete message(s) on the streams; no object was deleted", d)
	}
	if d := r.labDeletes(); d != 0 {
		r.t.Fatalf("GitLab commits deleted %d row file(s); no object was deleted", d)
	}
	ops, err := r.audited(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	if ops["DELETE"] != 0 {
		r.t.Fatalf("%d Postgres row(s) deleted; no object was deleted", ops["DELETE"])
	}
}
