package sinktest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// Harness connects the suite to one backend and its server.
type Harness struct {
	// New builds a fresh backend that writes for cluster, as the operator
	// does after a start.
	New func(t *testing.T, cluster string) sinks.Backend
	// State reads back the rows the server holds for an inventory and
	// cluster, as row JSON (any key order, any whitespace).
	State func(t *testing.T, id rows.Identity, cluster string) []string
	// Version changes whenever the server writes anything for the
	// inventory and cluster (a rewritten row, a published message).
	Version func(t *testing.T, id rows.Identity, cluster string) string
	// Messages, for event backends, counts what was published for the
	// inventory and cluster; nil for other backends.
	Messages func(t *testing.T, id rows.Identity, cluster string) int
	// Stop and Start take the server down and bring it back with its data.
	Stop, Start func(t *testing.T)
	// WholeObjects marks a snapshot backend whose unit of writing is an
	// object or file holding many rows (a document, a namespace): what it
	// writes for a change is not one unit per changed row, so the suite
	// checks that a change writes something and no change writes nothing,
	// instead of exact counts (Written may count objects or files).
	WholeObjects bool
	// NewWriter, for a backend that records its writer itself (event
	// streams, in message headers, checked when a full export recovers),
	// builds one that writes as writer and may take adopt's rows over.
	// nil: the backend keeps writer records (sinks.Claims), which the
	// suite wraps with sinks.Claimed.
	NewWriter func(t *testing.T, cluster, writer, adopt string) sinks.Backend
	// Untargeted marks a backend whose files do not say which target
	// wrote them (Git): a partial export keeps every file it owns, so a
	// row deleted meanwhile goes only with the next complete export.
	Untargeted bool
}

// wrote checks an acknowledgement's Written count against n changed rows.
func (h Harness) wrote(t *testing.T, ack sinks.Ack, n int, what string) {
	t.Helper()
	switch {
	case !h.WholeObjects && ack.Written != n:
		t.Errorf("%s wrote %d rows or messages, want %d", what, ack.Written, n)
	case h.WholeObjects && n == 0 && ack.Written != 0:
		t.Errorf("%s wrote %d rows, want none", what, ack.Written)
	case h.WholeObjects && n > 0 && ack.Written == 0:
		t.Errorf("%s wrote nothing, want the objects holding the %d changed rows", what, n)
	}
}

// Run runs every case. Each uses its own inventory, so cases share one
// server.
func Run(t *testing.T, h Harness) {
	t.Run("FirstExport", func(t *testing.T) { firstExport(t, h) })
	t.Run("UpdateSomeRows", func(t *testing.T) { updateSome(t, h) })
	t.Run("DeleteSomeRows", func(t *testing.T) { deleteSome(t, h) })
	t.Run("EmptySnapshotClearsTheInventory", func(t *testing.T) { empty(t, h) })
	t.Run("SameSnapshotTwiceWritesNothing", func(t *testing.T) { sameTwice(t, h) })
	t.Run("RestartSendsOnlyChanges", func(t *testing.T) { restart(t, h) })
	t.Run("TwoClustersNeverCollide", func(t *testing.T) { twoClusters(t, h) })
	t.Run("OutageLosesNothing", func(t *testing.T) { outage(t, h) })
	t.Run("ForeignWriterIsRefused", func(t *testing.T) { foreignWriter(t, h) })
	t.Run("PartialSnapshotKeepsHeldTargets", func(t *testing.T) { keepTargets(t, h) })
}

// Binding mimics the sink actor: it remembers the last acknowledged
// snapshot and hands the backend the delta from it.
type Binding struct {
	Backend sinks.Backend
	Acked   *rows.Snapshot
	// export identifies the export under way: kept by its retries, new
	// for the next one (rows.Delta.Export).
	export string
}

// Export sends snap and records it when acknowledged.
func (b *Binding) Export(ctx context.Context, snap *rows.Snapshot) (sinks.Ack, error) {
	if b.export == "" {
		b.export = rand.Text()
	}
	d := rows.Diff(b.Acked, snap)
	d.Export = b.export
	ack, err := b.Backend.Export(ctx, d)
	if err == nil {
		b.Acked, b.export = snap, ""
	}
	return ack, err
}

func (b *Binding) mustExport(t *testing.T, snap *rows.Snapshot) sinks.Ack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ack, err := b.Export(ctx, snap)
	if err != nil {
		t.Fatalf("export of %d rows: %v", len(snap.Rows), err)
	}
	if ack.Rows != len(snap.Rows) {
		t.Fatalf("backend acknowledged %d rows, the snapshot has %d", ack.Rows, len(snap.Rows))
	}
	return ack
}

// Rows builds n rows for target "shop"; version changes their content.
func Rows(n int, version string) []*rows.Row { return targetRows("shop", "app", n, version) }

// targetRows builds n rows for target, objects named prefix-NNNN.
func targetRows(target, prefix string, n int, version string) []*rows.Row {
	out := make([]*rows.Row, 0, n)
	uid := "uid-"
	if prefix != "app" {
		uid = "uid-" + prefix + "-"
	}
	for i := range n {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: target, Group: "apps", Version: "v1", Kind: "Deployment"}, Namespace: "demo",
			Name: fmt.Sprintf("%s-%04d", prefix, i), UID: fmt.Sprintf("%s%04d", uid, i)}, rows.AttributesOf(map[string]any{"image": "registry.example/app:" + version, "replicas": i % 5, "note": "<&>"}))
		if err != nil {
			panic(err)
		}
		out = append(out, r)
	}
	return out
}

// Snap builds a snapshot of rs for inventory id.
func Snap(id rows.Identity, rs []*rows.Row) *rows.Snapshot {
	return rows.NewSnapshot(id, slices.Clone(rs), time.Now())
}

func identity(t *testing.T) rows.Identity {
	return rows.Identity{Namespace: "default", Name: "inv-" + sanitize(t.Name()), Generation: 1}
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// expectState fails unless the server holds exactly rs.
func expectState(t *testing.T, h Harness, id rows.Identity, cluster string, rs []*rows.Row) {
	t.Helper()
	want := map[string]int{}
	for _, r := range rs {
		want[Canonical(t, string(r.JSON()))]++
	}
	got := map[string]int{}
	for _, s := range h.State(t, id, cluster) {
		got[Canonical(t, s)]++
	}
	if !maps.Equal(got, want) {
		missing, extra := 0, 0
		for k, n := range want {
			if got[k] < n {
				missing += n - got[k]
			}
		}
		for k, n := range got {
			if want[k] < n {
				extra += n - want[k]
			}
		}
		t.Fatalf("server holds %d rows for %s/%s cluster %q, want %d: %d missing or stale, %d unexpected",
			len(h.State(t, id, cluster)), id.Namespace, id.Name, cluster, len(rs), missing, extra)
	}
}

// Canonical re-encodes a row's JSON with sorted keys, so two encodings of
// one row compare equal.
func Canonical(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("row is not JSON: %v: %s", err, s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// mixed returns base with rows [from, to) replaced by their version v.
func mixed(base []*rows.Row, from, to int, v string) []*rows.Row {
	out := slices.Clone(base)
	changed := Rows(to, v)
	copy(out[from:to], changed[from:to])
	return out
}
