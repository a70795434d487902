package sink_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// partsBackend records how many parts each export arrived in.
type partsBackend struct {
	mu    sync.Mutex
	parts []int
}

func (b *partsBackend) Export(context.Context, *rows.Snapshot) (sinks.Ack, error) {
	return b.ExportParts(context.Background(), nil, nil)
}

func (b *partsBackend) ExportParts(_ context.Context, snap *rows.Snapshot, parts []*rows.Part) (sinks.Ack, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.parts = append(b.parts, len(parts))
	return sinks.Ack{Changed: true}, nil
}

// treeBackend writes a file per row: parts would not change what it
// writes.
type treeBackend struct{ partsBackend }

func (*treeBackend) WantsParts(*rows.Snapshot) bool { return false }

// rowsBackend is a backend of rows (a database): it stores deltas.
type rowsBackend struct {
	calls, rows, upserts int
	deleted              []string
}

func (b *rowsBackend) Export(_ context.Context, d *rows.Delta) (sinks.Ack, error) {
	b.calls++
	b.rows, b.upserts, b.deleted = len(d.Next.Rows), len(d.Upserts), nil
	for _, r := range d.Deletes {
		b.deleted = append(b.deleted, r.Key().String())
	}
	return sinks.Ack{Rows: len(d.Next.Rows)}, nil
}

func sized(t *testing.T, n, pad int) *rows.Snapshot {
	t.Helper()
	var rs []*rows.Row
	for i := range n {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "ns", TargetName: "t", Version: "v1", Kind: "ConfigMap"}, Namespace: "ns", Name: string(rune('a' + i)),
			UID: string(rune('a' + i))}, rows.AttributesOf(map[string]any{"pad": strings.Repeat("x", pad)}))
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rows.NewSnapshot(rows.Identity{Namespace: "ns", Name: "inv", Generation: 1}, rs, time.Now())
}

// TestTheCeilingOfABinding: a snapshot binding's export over its ceiling
// reaches the backend in parts, and the result says how many; a row too
// large for the ceiling is set aside by any binding, named in the result,
// and the rest is exported.
func TestTheCeilingOfABinding(t *testing.T) {
	t.Run("a snapshot binding splits", func(t *testing.T) {
		b := &partsBackend{}
		sys, pid, results := harness(t, sink.Config{Key: "snapshot/git", Backend: sinks.Whole(b), MaxBytes: 2000, Partitioned: true})
		sys.Root.Send(pid, &sink.Offer{Snapshot: sized(t, 10, 400)})
		r := <-results
		if r.Err != nil || r.Ack.Parts < 3 {
			t.Fatalf("export: %d parts, %v", r.Ack.Parts, r.Err)
		}
		if len(b.parts) != 1 || b.parts[0] != r.Ack.Parts {
			t.Errorf("the backend got %v parts, the result says %d", b.parts, r.Ack.Parts)
		}
	})
	t.Run("under the ceiling, one part", func(t *testing.T) {
		b := &partsBackend{}
		sys, pid, results := harness(t, sink.Config{Key: "snapshot/git", Backend: sinks.Whole(b), MaxBytes: 1 << 20, Partitioned: true})
		sys.Root.Send(pid, &sink.Offer{Snapshot: sized(t, 10, 400)})
		if r := <-results; r.Err != nil || r.Ack.Parts != 1 {
			t.Fatalf("export: %d parts, %v", r.Ack.Parts, r.Err)
		}
	})
	t.Run("a backend writing a file per row gets no parts", func(t *testing.T) {
		b := &treeBackend{}
		sys, pid, results := harness(t, sink.Config{Key: "snapshot/git", Backend: sinks.Whole(b), MaxBytes: 2000, Partitioned: true})
		sys.Root.Send(pid, &sink.Offer{Snapshot: sized(t, 10, 400)})
		if r := <-results; r.Err != nil || r.Ack.Parts != 1 {
			t.Fatalf("export: %d parts, %v", r.Ack.Parts, r.Err)
		}
		if len(b.parts) != 1 || b.parts[0] != 0 {
			t.Errorf("the backend got %v parts, want the whole snapshot alone", b.parts)
		}
		// A row too large for the ceiling is set aside; the others go.
		sys.Root.Send(pid, &sink.Offer{Snapshot: mixed(t, 400, 5000, 400)})
		r := <-results
		if r.Err != nil || len(r.Ack.Rejected) != 1 || r.Ack.Rejected[0].Key != "ns/t/b" ||
			!strings.Contains(r.Ack.Rejected[0].Reason, "single item export envelope exceeds maxExportBytes (2000)") {
			t.Fatalf("want the export through with ns/t/b set aside, got %v, rejected %+v", r.Err, r.Ack.Rejected)
		}
	})
	for _, tc := range []struct {
		name        string
		partitioned bool
	}{{"a row too large is set aside by a snapshot binding", true}, {"and by a database binding", false}} {
		t.Run(tc.name, func(t *testing.T) {
			b := &rowsBackend{}
			sys, pid, results := harness(t, sink.Config{Key: "database/pg", Backend: b, MaxBytes: 2000, Partitioned: tc.partitioned})
			sys.Root.Send(pid, &sink.Offer{Snapshot: mixed(t, 400, 5000, 400)})
			r := <-results
			if r.Err != nil || len(r.Ack.Rejected) != 1 || r.Ack.Rejected[0].Key != "ns/t/b" {
				t.Fatalf("want the export through with ns/t/b set aside, got %v, rejected %+v", r.Err, r.Ack.Rejected)
			}
			if b.calls != 1 || b.rows != 2 || b.upserts != 2 {
				t.Errorf("the backend got %d calls, %d rows, %d upserts; want the two rows that fit", b.calls, b.rows, b.upserts)
			}
		})
	}
	t.Run("a row that grows past the ceiling leaves the sink", func(t *testing.T) {
		b := &rowsBackend{}
		sys, pid, results := harness(t, sink.Config{Key: "database/pg", Backend: b, MaxBytes: 2000})
		sys.Root.Send(pid, &sink.Offer{Snapshot: mixed(t, 400, 400, 400)})
		if r := <-results; r.Err != nil || len(r.Ack.Rejected) != 0 {
			t.Fatalf("first export: %v, rejected %+v", r.Err, r.Ack.Rejected)
		}
		sys.Root.Send(pid, &sink.Offer{Snapshot: mixed(t, 400, 5000, 400)})
		r := <-results
		if r.Err != nil || len(r.Ack.Rejected) != 1 || r.Ack.Rejected[0].Key != "ns/t/b" {
			t.Fatalf("second export: %v, rejected %+v", r.Err, r.Ack.Rejected)
		}
		if b.rows != 2 || b.upserts != 0 || len(b.deleted) != 1 || b.deleted[0] != "ns/t/b" {
			t.Errorf("the backend got %d rows, %d upserts, deletes %v; want the old version of ns/t/b deleted", b.rows, b.upserts, b.deleted)
		}
	})
}

// mixed is a snapshot of rows a, b, c… with the given padding each.
func mixed(t *testing.T, pads ...int) *rows.Snapshot {
	t.Helper()
	var rs []*rows.Row
	for i, pad := range pads {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "ns", TargetName: "t", Version: "v1", Kind: "ConfigMap"}, Namespace: "ns", Name: string(rune('a' + i)),
			UID: string(rune('a' + i))}, rows.AttributesOf(map[string]any{"pad": strings.Repeat("x", pad)}))
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rows.NewSnapshot(rows.Identity{Namespace: "ns", Name: "inv", Generation: 1}, rs, time.Now())
}
