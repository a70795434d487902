package objectstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"gocloud.dev/blob/memblob"

	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/objectstore"
)

// TestASplitExportWritesOneObjectPerPart: a document export split by the
// binding's ceiling is one object per part, named by the manifest written
// after them; when the inventory fits again, the one document replaces
// them and they are deleted.
func TestASplitExportWritesOneObjectPerPart(t *testing.T) {
	for _, tc := range []struct {
		format string
		key    func(i, n int) string
		whole  string
	}{
		{"json", func(i, n int) string { return fmt.Sprintf("inventory/ops/inv.part-%04d-of-%04d.json", i, n) }, "inventory/ops/inv.json"},
		{"parquet", func(i, n int) string {
			return fmt.Sprintf("inventory/cluster=default/ns=ops/name=inv/generation=3.part-%04d-of-%04d.parquet", i, n)
		}, "inventory/cluster=default/ns=ops/name=inv/generation=3.parquet"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			ctx := context.Background()
			b := memblob.OpenBucket(nil)
			st, err := objectstore.New(objectstore.Config{Bucket: b, Format: tc.format})
			if err != nil {
				t.Fatal(err)
			}
			all := rows.NewSnapshot(rows.Identity{Namespace: "ops", Name: "inv", Generation: 3}, sinktest.Rows(40, "1"), time.Now())
			parts, err := rows.Partition(all, 3000)
			if err != nil || len(parts) < 3 {
				t.Fatalf("%d parts, %v", len(parts), err)
			}
			if _, err := st.ExportParts(ctx, all, parts); err != nil {
				t.Fatal(err)
			}
			list := func() []string {
				var out []string
				it := b.List(nil)
				for {
					o, err := it.Next(ctx)
					if err != nil {
						break
					}
					out = append(out, o.Key)
				}
				slices.Sort(out)
				return out
			}
			var want []string
			for i := range parts {
				want = append(want, tc.key(i+1, len(parts)))
			}
			want = append(want, ".kollect/default/ops/inv.json")
			slices.Sort(want)
			if got := list(); !slices.Equal(got, want) {
				t.Fatalf("objects %v, want %v", got, want)
			}
			var m struct {
				PartTotal int
				Objects   map[string]struct{ Rows int }
			}
			body, _ := b.ReadAll(ctx, ".kollect/default/ops/inv.json")
			if err := json.Unmarshal(body, &m); err != nil || m.PartTotal != len(parts) || len(m.Objects) != len(parts) {
				t.Fatalf("manifest %+v %v", m, err)
			}
			total := 0
			for _, o := range m.Objects {
				total += o.Rows
			}
			if total != 40 {
				t.Errorf("the manifest's objects hold %d rows, want 40", total)
			}
			if tc.format == "json" {
				body, _ := b.ReadAll(ctx, tc.key(2, len(parts)))
				var e struct{ PartIndex, PartTotal int }
				if err := json.Unmarshal(body, &e); err != nil || e.PartIndex != 2 || e.PartTotal != len(parts) || len(body) > 3000 {
					t.Errorf("part 2: %+v, %d bytes, %v", e, len(body), err)
				}
			}
			if ack, err := st.ExportParts(ctx, all, parts); err != nil || ack.Changed {
				t.Errorf("the same parts again: changed %v, %v", ack.Changed, err)
			}
			if _, err := st.Export(ctx, all); err != nil {
				t.Fatal(err)
			}
			if got := list(); !slices.Equal(got, []string{".kollect/default/ops/inv.json", tc.whole}) {
				t.Fatalf("once it fits, objects %v", got)
			}
		})
	}
}
