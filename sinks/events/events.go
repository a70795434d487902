package events

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"strings"
	"time"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// Change types.
const (
	Upsert = "upsert"
	Delete = "delete"
)

// Header names carried by every message.
const (
	HeaderSchema    = "kollect-schema-version"
	HeaderCluster   = "kollect-cluster"
	HeaderInventory = "kollect-inventory"
	HeaderChange    = "kollect-change"
	HeaderChangeID  = "kollect-change-id"
	HeaderKey       = "kollect-key"
	HeaderRowSum    = "kollect-row-sum"
	// HeaderWriter names the operator that published the message (its
	// writer id, sinks.Claims): recovery refuses a scope whose live rows
	// another operator published.
	HeaderWriter = "kollect-writer"
)

// Change is one message to publish.
type Change struct {
	Key  string
	Type string // Upsert or Delete
	ID   string
	Row  *rows.Row // the new row (Upsert) or the deleted one when known
	Sum  string    // the new row's content sum (Upsert)
}

// Scope is what a backend writes for: the inventory and the sink's
// cluster; Writer is the operator that publishes (empty: not recorded).
type Scope struct {
	Cluster   string
	Inventory rows.Identity
	Writer    string
}

func (s Scope) inventory() string { return s.Inventory.Namespace + "/" + s.Inventory.Name }

// Key is a row's stable message key: cluster/namespace/group/kind/name of
// the object, then #inventoryNamespace/inventoryName/target so two targets
// or two inventories sharing a topic never overwrite each other's rows. It
// does not contain the UID, so a compacted topic keeps one record for an
// object that is deleted and created again.
func (s Scope) Key(r *rows.Row) string {
	return strings.Join([]string{s.Cluster, r.Namespace, r.Group, r.Kind, r.Name}, "/") +
		"#" + s.inventory() + "/" + r.TargetName
}

// ChangeID is the same for the same change (key, type, content before and
// after) within one export, so a re-publish after a failure is recognised
// as a duplicate; export (rows.Delta.Export) tells a change made again in a
// later export from a retry.
func ChangeID(export, key, typ, prevSum, nextSum string) string {
	h := sha256.New()
	for _, p := range []string{export, key, typ, prevSum, nextSum} {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// State is what a stream holds for one scope: key → sum of the live row.
type State map[string]string

// Recovered is a scope's state read back from a stream, and the writer of
// its last message ("" when it carried none: an earlier version's).
type Recovered struct {
	State  State
	Writer string
}

// Fold applies one message read back from the stream; messages of other
// scopes are ignored.
func (r *Recovered) Fold(s Scope, header func(string) string) {
	if r.State == nil {
		r.State = State{}
	}
	if header(HeaderCluster) != s.Cluster || header(HeaderInventory) != s.inventory() {
		return
	}
	r.fold(header)
}

func (r *Recovered) fold(header func(string) string) {
	r.Writer = header(HeaderWriter)
	r.State.fold(header)
}

// Check refuses a full export over live rows another operator published
// last: the writer the stream names is neither s.Writer nor adopt. A
// scope without live rows belongs to no one.
func (r *Recovered) Check(s Scope, adopt string) error {
	if s.Writer == "" || r.Writer == "" || r.Writer == s.Writer || r.Writer == adopt || len(r.State) == 0 {
		return nil
	}
	return &sinks.ForeignWriter{Inventory: s.inventory(), Holder: r.Writer, Self: s.Writer}
}

// Image is what a stream holds for every inventory of one cluster, folded
// in one read: the sinks of many inventories on one topic recover from it
// instead of reading the topic once each. It keeps folding every scope,
// so a scope asked for again (an export retried in full after a failure)
// is answered from the image and what the stream got since, never by
// reading the stream from its start again.
type Image struct {
	Cluster string
	scopes  map[string]*Recovered // by inventory (namespace/name)
}

// Fold applies one message; messages of other clusters are ignored.
func (im *Image) Fold(header func(string) string) {
	if header(HeaderCluster) != im.Cluster {
		return
	}
	inv := header(HeaderInventory)
	r, ok := im.scopes[inv]
	if !ok {
		if im.scopes == nil {
			im.scopes = map[string]*Recovered{}
		}
		r = &Recovered{State: State{}}
		im.scopes[inv] = r
	}
	r.fold(header)
}

// Take returns a copy of what the image holds for s (empty when nothing):
// the export that takes it owns the copy, and the image goes on folding.
func (im *Image) Take(s Scope) *Recovered {
	r, ok := im.scopes[s.inventory()]
	if !ok || s.Cluster != im.Cluster {
		return &Recovered{State: State{}}
	}
	return &Recovered{State: maps.Clone(r.State), Writer: r.Writer}
}

func (st State) fold(header func(string) string) {
	key := header(HeaderKey)
	switch header(HeaderChange) {
	case Upsert:
		st[key] = header(HeaderRowSum)
	case Delete:
		delete(st, key)
	}
}

// keyTarget is the target name a message key (Key) ends with.
func keyTarget(k string) string { return k[strings.LastIndexByte(k, '/')+1:] }

// Plan turns a delta into changes: deletes first (so an object recreated
// under the same key ends as an upsert), then upserts. With a full delta
// (the backend's state unknown) it compares against recovered, the state
// folded from the stream, and publishes only what differs; the live rows
// of targets a partial snapshot keeps get no tombstone.
func Plan(s Scope, d *rows.Delta, recovered State) []Change {
	var out []Change
	if d.Full() {
		live := make(map[string]bool, len(d.Next.Rows))
		var ups []Change
		for _, r := range d.Next.Rows {
			k := s.Key(r)
			live[k] = true
			sum := r.Sum()
			if prev, ok := recovered[k]; ok && prev == sum {
				continue
			}
			ups = append(ups, Change{Key: k, Type: Upsert, Row: r, Sum: sum, ID: ChangeID(d.Export, k, Upsert, recovered[k], sum)})
		}
		for k, prev := range recovered {
			if !live[k] && !d.Next.Keeps(keyTarget(k)) {
				out = append(out, Change{Key: k, Type: Delete, ID: ChangeID(d.Export, k, Delete, prev, "")})
			}
		}
		return append(out, ups...)
	}
	for _, r := range d.Deletes {
		k, prev := s.Key(r), r.Sum()
		out = append(out, Change{Key: k, Type: Delete, Row: r, ID: ChangeID(d.Export, k, Delete, prev, "")})
	}
	for i, r := range d.Upserts {
		k, sum := s.Key(r), r.Sum()
		prev := d.Replaced[i].Sum()
		out = append(out, Change{Key: k, Type: Upsert, Row: r, Sum: sum, ID: ChangeID(d.Export, k, Upsert, prev, sum)})
	}
	return out
}

// SetAside reports c as a row the backend refused, under the row's key
// (targetNamespace/targetName/uid) as every backend reports it.
func (c Change) SetAside(reason string) sinks.Rejection {
	key := c.Key
	if c.Row != nil {
		key = c.Row.Key().String()
	}
	return sinks.Rejection{Key: key, Reason: reason}
}

// Headers lists a change's headers in a fixed order.
func (s Scope) Headers(c Change) [][2]string {
	h := [][2]string{{HeaderSchema, rows.SchemaVersion}, {HeaderCluster, s.Cluster}, {HeaderInventory, s.inventory()},
		{HeaderChange, c.Type}, {HeaderChangeID, c.ID}, {HeaderKey, c.Key}}
	if c.Type == Upsert {
		h = append(h, [2]string{HeaderRowSum, c.Sum})
	}
	if s.Writer != "" {
		h = append(h, [2]string{HeaderWriter, s.Writer})
	}
	return h
}

// Body is a change's message value: compact JSON with the row.
func (s Scope) Body(c Change, at time.Time) []byte {
	var b strings.Builder
	b.WriteString(`{"schemaVersion":"` + rows.SchemaVersion + `","changeId":"` + c.ID + `","change":"` + c.Type + `"`)
	b.WriteString(`,"timestamp":"` + at.UTC().Format(time.RFC3339Nano) + `","cluster":`)
	b.Write(quote(s.Cluster))
	b.WriteString(`,"inventory":{"namespace":`)
	b.Write(quote(s.Inventory.Namespace))
	b.WriteString(`,"name":`)
	b.Write(quote(s.Inventory.Name))
	b.WriteString(`},"key":`)
	b.Write(quote(c.Key))
	if c.Row != nil {
		b.WriteString(`,"row":`)
		b.Write(c.Row.JSON())
	}
	b.WriteString("}")
	return []byte(b.String())
}

func quote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
