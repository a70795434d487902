package inventory

import (
	"testing"
	"time"

	"kollect.dev/kollect/model/rows"
)

// Each target namespace's rows of a snapshot get the items fingerprint of
// that run of rows.
func TestShardChecksumsFingerprintEachNamespace(t *testing.T) {
	mk := func(ns, name string) *rows.Row {
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: ns, TargetName: "t", Version: "v1", Kind: "ConfigMap"}, Namespace: ns, Name: name, UID: ns + name},
			rows.AttributesOf(map[string]any{"v": name}))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	snap := rows.NewSnapshot(rows.Identity{Namespace: "cluster", Name: "all"}, []*rows.Row{mk("b", "x"), mk("a", "y"), mk("a", "x"), mk("c", "z")}, time.Now())
	got := shardChecksums(snap.Rows)
	byNS := map[string][]*rows.Row{}
	for _, r := range snap.Rows {
		byNS[r.TargetNamespace] = append(byNS[r.TargetNamespace], r)
	}
	if len(got) != 3 {
		t.Fatalf("%d shards, want 3: %v", len(got), got)
	}
	for ns, rs := range byNS {
		if got[ns] != rows.Checksum(rs) || got[ns] == "" {
			t.Errorf("shard %s: %s, want %s", ns, got[ns], rows.Checksum(rs))
		}
	}
	if got["a"] == got["b"] {
		t.Error("different shards share a checksum")
	}
}
