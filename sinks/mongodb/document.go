package mongodb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"kollect.dev/kollect/model/rows"
)

// Field names of a stored document, plus payload_sha256:
// the row's content hash, so that a reconciliation compares documents
// without reading their payloads.
const (
	fieldID         = "_id"
	fieldNamespace  = "inventory_namespace"
	fieldName       = "inventory_name"
	fieldCluster    = "cluster"
	fieldTarget     = "target_name"
	fieldUID        = "source_uid"
	fieldResourceNS = "resource_namespace"
	fieldPayload    = "payload"
	fieldHash       = "payload_sha256"
	fieldExportedAt = "exported_at"
)

// IdentityIndex is the unique index an ensure-mode sink creates, in key
// order. It includes the cluster so that fleets can share a collection.
var IdentityIndex = []string{fieldNamespace, fieldName, fieldCluster, fieldTarget, fieldUID}

// identityIndexName names the index this sink creates.
const identityIndexName = "kollect_identity"

// maxDocument is MongoDB's document size limit, less room for the fields
// around the payload.
const maxDocument = 16*1024*1024 - 4096

// scope is the part of a document key shared by an inventory's documents
// written by one cluster.
type scope struct {
	namespace, name, cluster string
}

func (s scope) filter() bson.D {
	return bson.D{{Key: fieldNamespace, Value: s.namespace}, {Key: fieldName, Value: s.name}, {Key: fieldCluster, Value: s.cluster}}
}

// id is a document's _id: the cluster (free text, so it comes first), then
// the inventory, the target and the UID, which Kubernetes names never let
// contain a '/': read from the right, every _id has one meaning.
func (s scope) id(target, uid string) string {
	var b strings.Builder
	b.Grow(len(s.cluster) + len(s.namespace) + len(s.name) + len(target) + len(uid) + 4)
	b.WriteString(s.cluster)
	b.WriteByte('/')
	b.WriteString(s.namespace)
	b.WriteByte('/')
	b.WriteString(s.name)
	b.WriteByte('/')
	b.WriteString(target)
	b.WriteByte('/')
	b.WriteString(uid)
	return b.String()
}

// document is the stored form of a row.
func (s scope) document(r *rows.Row, at time.Time) (bson.D, error) {
	payload, err := Payload(r.JSON())
	if err != nil {
		return nil, err
	}
	ns := r.Namespace
	if ns == "" {
		ns = s.namespace
	}
	return bson.D{
		{Key: fieldID, Value: s.id(r.TargetName, r.UID)},
		{Key: fieldNamespace, Value: s.namespace},
		{Key: fieldName, Value: s.name},
		{Key: fieldCluster, Value: s.cluster},
		{Key: fieldTarget, Value: r.TargetName},
		{Key: fieldUID, Value: r.UID},
		{Key: fieldResourceNS, Value: ns},
		{Key: fieldPayload, Value: payload},
		{Key: fieldHash, Value: r.Sum()},
		{Key: fieldExportedAt, Value: at},
	}, nil
}

// Payload turns a row's canonical JSON into an embedded BSON document with
// the same keys in the same order. Integers that fit become int64, other
// numbers doubles. Keys are taken literally: a key such as "$ref" stays a
// key, which MongoDB's Extended JSON reader would have turned into a
// database reference.
func Payload(raw []byte) (bson.Raw, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := value(dec)
	if err != nil {
		return nil, fmt.Errorf("row JSON: %w", err)
	}
	doc, ok := v.(bson.D)
	if !ok {
		return nil, errors.New("row JSON is not an object")
	}
	b, err := bson.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode payload: %w", err)
	}
	if len(b) > maxDocument {
		return nil, errTooLarge
	}
	return b, nil
}

var errTooLarge = errors.New("the row is larger than MongoDB's 16 MiB document limit")

// errNulKey is a key holding a NUL character, which BSON cannot encode.
var errNulKey = errors.New("a key holds a NUL character (\\u0000), which BSON cannot store")

func value(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var d bson.D
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := k.(string)
				if strings.IndexByte(key, 0) >= 0 {
					return nil, errNulKey
				}
				v, err := value(dec)
				if err != nil {
					return nil, err
				}
				d = append(d, bson.E{Key: key, Value: v})
			}
			if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			if d == nil {
				d = bson.D{}
			}
			return d, nil
		case '[':
			a := bson.A{}
			for dec.More() {
				v, err := value(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return a, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i, nil
		}
		f, err := t.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", t, err)
		}
		return f, nil
	default: // string, bool, nil
		return t, nil
	}
}
