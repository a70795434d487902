package rows

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The one-pass walk of two ordered snapshots gives the delta that matching
// them by key gives, in the same order, on random pairs of snapshots where
// rows stay (the same value or an equal copy), change, move (a new
// version: another place in the order, the same key), leave and arrive.
func TestDiffWalkAgreesWithMatchingByKey(t *testing.T) {
	for seed := range uint64(500) {
		rnd := rand.New(rand.NewPCG(seed, 7))
		build := func(target, name, uid, version, value string) *Row {
			r, err := New(Row{Origin: &Origin{TargetNamespace: "ns", TargetName: target, Version: version, Kind: "ConfigMap"}, Namespace: "app", Name: name, UID: uid}, Attributes{{Name: "v", Value: value}})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		var prev, next []*Row
		for k := range 12 + rnd.IntN(30) {
			target, name, uid := []string{"a", "b"}[rnd.IntN(2)], fmt.Sprintf("o%02d", rnd.IntN(40)), fmt.Sprintf("u%03d", k)
			var old *Row
			if rnd.IntN(4) > 0 {
				old = build(target, name, uid, "v1", "x")
				prev = append(prev, old)
			}
			switch rnd.IntN(6) {
			case 0: // absent from next
			case 1:
				if old != nil {
					next = append(next, old)
				}
			case 2:
				next = append(next, build(target, name, uid, "v1", "x")) // equal copy, or new
			case 3:
				next = append(next, build(target, name, uid, "v1", "y")) // changed
			default:
				next = append(next, build(target, name, uid, "v2", "x")) // moved
			}
		}
		id := Identity{Namespace: "ns", Name: "inv"}
		p, n := NewSnapshot(id, prev, time.Time{}), NewSnapshot(id, next, time.Time{})
		got, want := &Delta{}, &Delta{}
		got.walk(p.Rows, n.Rows)
		want.match(p.Rows, n.Rows)
		for _, c := range []struct {
			what      string
			got, want []*Row
		}{{"upserts", got.Upserts, want.Upserts}, {"replaced", got.Replaced, want.Replaced}, {"deletes", got.Deletes, want.Deletes}} {
			if !slices.Equal(c.got, c.want) {
				t.Fatalf("seed %d: %s %v, matching by key gives %v", seed, c.what, sortKeys(c.got), sortKeys(c.want))
			}
		}
		if d := Diff(p, n); !slices.Equal(d.Upserts, want.Upserts) || !slices.Equal(d.Deletes, want.Deletes) {
			t.Fatalf("seed %d: Diff gives another delta", seed)
		}
	}
}

func sortKeys(rs []*Row) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		if r != nil {
			out[i] = fmt.Sprintf("%s/%s/%s@%s", r.TargetName, r.Name, r.UID, r.Version)
		}
	}
	return out
}

// BenchmarkDiff: 100,000 rows of which 1,000 changed, by the one-pass
// walk and by matching keys.
func BenchmarkDiff(b *testing.B) {
	id := Identity{Namespace: "ns", Name: "inv"}
	var prev []*Row
	for i := range 100_000 {
		r, err := New(Row{Origin: &Origin{TargetNamespace: "ns", TargetName: "t", Version: "v1", Kind: "ConfigMap"}, Namespace: fmt.Sprintf("team-%02d", i%20), Name: fmt.Sprintf("cm-%06d", i),
			UID: fmt.Sprintf("%08x-1b2c-4d5e-8f90-%012x", i, i*7)}, Attributes{{Name: "v", Value: "x"}})
		if err != nil {
			b.Fatal(err)
		}
		prev = append(prev, r)
	}
	p := NewSnapshot(id, prev, time.Time{})
	next := slices.Clone(p.Rows)
	for i := 0; i < len(next); i += 100 {
		c, err := New(*next[i], Attributes{{Name: "v", Value: "y"}})
		if err != nil {
			b.Fatal(err)
		}
		next[i] = c
	}
	n := NewSnapshot(id, next, time.Time{})
	for _, bc := range []struct {
		name string
		diff func(d *Delta, prev, next []*Row)
	}{{"walk", (*Delta).walk}, {"match", (*Delta).match}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d := &Delta{}
				bc.diff(d, p.Rows, n.Rows)
				if len(d.Upserts) != 1000 {
					b.Fatalf("%d upserts", len(d.Upserts))
				}
			}
		})
	}
	b.Run("sorted check", func(b *testing.B) {
		for b.Loop() {
			if !slices.IsSortedFunc(n.Rows, Compare) {
				b.Fatal("unsorted")
			}
		}
	})
}

// BenchmarkChecksum: the checksum of 100,000 rows of one target and kind,
// as every export computes it.
func BenchmarkChecksum(b *testing.B) {
	origin := &Origin{TargetNamespace: "kollect-loadtest", TargetName: "configmaps", Version: "v1", Kind: "ConfigMap"}
	rs := make([]*Row, 0, 100_000)
	for i := range 100_000 {
		r, err := New(Row{Origin: origin, Namespace: fmt.Sprintf("team-%02d", i%20), Name: fmt.Sprintf("cm-%06d", i),
			UID: fmt.Sprintf("%08x-1b2c-4d5e-8f90-%012x", i, i*7)}, Attributes{{Name: "v", Value: "x"}})
		if err != nil {
			b.Fatal(err)
		}
		rs = append(rs, r)
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(Checksum(rs)) != 64 {
			b.Fatal("short checksum")
		}
	}
}
