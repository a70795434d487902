package rows_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"kollect.dev/kollect/model/rows"
)

// partRows are n rows whose attributes differ in size, so that the
// byte-order sort and the canonical order differ, of two targets and
// kinds (every third row a CronJob).
func partRows(t *testing.T, n int) []*rows.Row {
	t.Helper()
	var out []*rows.Row
	deployments := &rows.Origin{TargetNamespace: "shop", TargetName: "deployments", Group: "apps", Version: "v1", Kind: "Deployment"}
	cronJobs := &rows.Origin{TargetNamespace: "shop", TargetName: "cron", Group: "batch", Version: "v1", Kind: "CronJob"}
	for i := range n {
		origin := deployments
		if i%3 == 0 {
			origin = cronJobs
		}
		r, err := rows.New(rows.Row{Origin: origin, Namespace: "demo", Name: fmt.Sprintf("app-%03d", i), UID: fmt.Sprintf("uid-%03d", (i*37)%n)}, rows.AttributesOf(map[string]any{"pad": strings.Repeat("x", (i*53)%200)}))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestPartition(t *testing.T) {
	snap := rows.NewSnapshot(rows.Identity{Namespace: "shop", Name: "inventory", Generation: 7}, partRows(t, 120), time.Date(2026, 12, 4, 1, 2, 3, 456000000, time.UTC))
	whole := int64(len(snap.Envelope("")))
	for _, tc := range []struct {
		name    string
		ceiling int64
		one     bool
	}{
		{"no ceiling", 0, true},
		{"the whole envelope fits exactly", whole, true},
		{"one byte less", whole - 1, false},
		{"a third", whole / 3, false},
		{"a few rows a part", 1500, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts, err := rows.Partition(snap, tc.ceiling)
			if err != nil {
				t.Fatal(err)
			}
			if tc.one {
				if len(parts) != 1 || parts[0].Snapshot != snap || parts[0].Total != 0 || parts[0].Suffix() != "" {
					t.Fatalf("want the snapshot as one part, got %d parts", len(parts))
				}
				return
			}
			if len(parts) < 2 {
				t.Fatalf("a %d-byte envelope under a %d-byte ceiling is one part", whole, tc.ceiling)
			}
			seen := map[rows.Key]int{}
			for i, p := range parts {
				env := p.Envelope("")
				if int64(len(env)) > tc.ceiling {
					t.Errorf("part %d: %d bytes over the %d ceiling", p.Index, len(env), tc.ceiling)
				}
				if p.Index != i+1 || p.Total != len(parts) || p.Suffix() != fmt.Sprintf(".part-%04d-of-%04d", i+1, len(parts)) {
					t.Errorf("part %d of %d named %s", p.Index, p.Total, p.Suffix())
				}
				if !slices.IsSortedFunc(p.Rows, rows.Compare) || p.Checksum != rows.Checksum(p.Rows) {
					t.Errorf("part %d: rows not in canonical order or checksum not theirs", p.Index)
				}
				var e struct {
					PartIndex, PartTotal, ItemCount int
					Generation                      int64
					ExportedAt                      string
					Items                           []json.RawMessage
				}
				if err := json.Unmarshal(env, &e); err != nil {
					t.Fatal(err)
				}
				if e.PartIndex != p.Index || e.PartTotal != p.Total || e.ItemCount != len(p.Rows) || len(e.Items) != len(p.Rows) ||
					e.Generation != 7 || e.ExportedAt != "2026-12-04T01:02:03.456Z" {
					t.Errorf("part %d envelope: %+v", p.Index, e)
				}
				for _, r := range p.Rows {
					seen[r.Key()]++
				}
			}
			if len(seen) != len(snap.Rows) {
				t.Errorf("the parts hold %d distinct rows, the snapshot %d", len(seen), len(snap.Rows))
			}
			for k, n := range seen {
				if n != 1 {
					t.Errorf("row %s is in %d parts", k, n)
				}
			}
			// Greedy: a part and the first row of the next, by JSON text,
			// would not have fitted.
			sorted := slices.Clone(snap.Rows)
			slices.SortFunc(sorted, func(a, b *rows.Row) int { return bytes.Compare(a.JSON(), b.JSON()) })
			next := 0
			for _, p := range parts[:len(parts)-1] {
				run := slices.Clone(sorted[next : next+len(p.Rows)])
				slices.SortFunc(run, rows.Compare)
				if !slices.Equal(run, p.Rows) {
					t.Fatalf("part %d is not the next run of rows by JSON text", p.Index)
				}
				next += len(p.Rows)
				grown := rows.NewSnapshot(snap.Inventory, append(slices.Clone(p.Rows), sorted[next]), snap.ExportedAt)
				trial := &rows.Part{Snapshot: grown, Index: len(snap.Rows), Total: len(snap.Rows)}
				if int64(len(trial.Envelope(""))) <= tc.ceiling {
					t.Errorf("part %d could have taken the next row", p.Index)
				}
			}
			again, _ := rows.Partition(snap, tc.ceiling)
			for i := range parts {
				if again[i].Checksum != parts[i].Checksum {
					t.Fatal("partitioning the same snapshot twice gave other parts")
				}
			}
		})
	}
}

func TestARowTooLargeForTheCeiling(t *testing.T) {
	rs := partRows(t, 10)
	big, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "shop", TargetName: "deployments", Version: "v1", Kind: "Deployment"}, Namespace: "demo", Name: "huge",
		UID: "uid-huge"}, rows.AttributesOf(map[string]any{"pad": strings.Repeat("y", 5000)}))
	if err != nil {
		t.Fatal(err)
	}
	snap := rows.NewSnapshot(rows.Identity{Namespace: "shop", Name: "inventory"}, append(rs, big), time.Now())
	_, err = rows.Partition(snap, 2000)
	var tooLarge *rows.ItemTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Key != big.Key() || tooLarge.Ceiling != 2000 ||
		!strings.Contains(err.Error(), "single item export envelope exceeds maxExportBytes (2000)") {
		t.Fatalf("want the huge row named, got %v", err)
	}
	if big := snap.Oversized(rs, 2000); len(big) != 0 {
		t.Errorf("small rows: %v", big[0])
	}
	if got := snap.Oversized([]*rows.Row{big}, 2000); len(got) != 1 || got[0].Key != big.Key() {
		t.Errorf("Oversized let the huge row through: %v", got)
	}
	if got := snap.Oversized([]*rows.Row{big}, 0); len(got) != 0 {
		t.Errorf("no ceiling: %v", got[0])
	}
}
