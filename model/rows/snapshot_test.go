package rows_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"kollect.dev/kollect/model/rows"
)

func mustRow(t *testing.T, r rows.Row, attrs rows.Attributes) *rows.Row {
	t.Helper()
	row, err := rows.New(r, attrs)
	if err != nil {
		t.Fatal(err)
	}
	return row
}

func TestSnapshotOrderChecksumAndEnvelope(t *testing.T) {
	a := mustRow(t, rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: "t", Group: "apps", Version: "v1", Kind: "Deployment"}, Namespace: "b", Name: "x", UID: "2"},
		rows.AttributesOf(map[string]any{"z": 1, "a": "<&>"}))
	b := mustRow(t, rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: "t", Version: "v1", Kind: "Pod"}, Namespace: "a", Name: "y", UID: "1"}, nil)
	at := time.Date(2026, 12, 2, 10, 0, 0, 500, time.UTC)
	snap := rows.NewSnapshot(rows.Identity{Namespace: "default", Name: "inv", Generation: 3}, []*rows.Row{a, b}, at)

	if snap.Rows[0] != b || snap.Rows[1] != a {
		t.Fatalf("want canonical order by namespace (a before b), got %s, %s", snap.Rows[0].Name, snap.Rows[1].Name)
	}
	// The checksum must equal SHA-256 over encoding/json's own output.
	want, err := json.Marshal([]*rows.Row{b, a})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(want)
	if snap.Checksum != hex.EncodeToString(sum[:]) {
		t.Errorf("checksum %s differs from sha256(json.Marshal(rows)) %x", snap.Checksum, sum)
	}
	if string(a.JSON()) != `{"targetNamespace":"default","targetName":"t","namespace":"b","name":"x","group":"apps","version":"v1","kind":"Deployment","uid":"2","attributes":{"a":"\u003c\u0026\u003e","z":1}}` {
		t.Errorf("row JSON not canonical: %s", a.JSON())
	}

	var env struct {
		SchemaVersion string            `json:"schemaVersion"`
		Checksum      string            `json:"checksum"`
		Generation    int64             `json:"generation"`
		ItemCount     int               `json:"itemCount"`
		ExportedAt    string            `json:"exportedAt"`
		Items         []json.RawMessage `json:"items"`
	}
	raw := snap.Envelope("")
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("envelope is not JSON: %v\n%s", err, raw)
	}
	if env.SchemaVersion != rows.SchemaVersion || env.Checksum != snap.Checksum || env.Generation != 3 ||
		env.ItemCount != 2 || env.ExportedAt != "2026-12-02T10:00:00.0000005Z" || len(env.Items) != 2 {
		t.Errorf("unexpected envelope: %s", raw)
	}
}

func TestEmptySnapshotHasEmptyItems(t *testing.T) {
	snap := rows.NewSnapshot(rows.Identity{Namespace: "n", Name: "i"}, nil, time.Unix(0, 0))
	sum := sha256.Sum256([]byte("[]"))
	if snap.Checksum != hex.EncodeToString(sum[:]) {
		t.Errorf("empty checksum: got %s", snap.Checksum)
	}
	if got := string(snap.Envelope("")); got != `{"schemaVersion":"kollect.dev/v1alpha1","checksum":"`+snap.Checksum+`","itemCount":0,"exportedAt":"1970-01-01T00:00:00Z","items":[]}` {
		t.Errorf("empty envelope: %s", got)
	}
}

func TestCompareMatchesSortKey(t *testing.T) {
	mk := func(tns, tn, ns, n, uid string) *rows.Row {
		return mustRow(t, rows.Row{Origin: &rows.Origin{TargetNamespace: tns, TargetName: tn, Version: "v1", Kind: "K"}, Namespace: ns, Name: n, UID: uid}, nil)
	}
	all := []*rows.Row{mk("a", "t", "n", "x", "1"), mk("a", "t", "n", "xy", "1"), mk("a", "tt", "", "x", "1"),
		mk("ab", "", "", "", ""), mk("a", "t", "n", "x", "0"), mk("", "z", "z", "z", "z")}
	for _, a := range all {
		for _, b := range all {
			want := 0
			if a.SortKey() < b.SortKey() {
				want = -1
			} else if a.SortKey() > b.SortKey() {
				want = 1
			}
			if got := rows.Compare(a, b); got != want {
				t.Errorf("Compare(%q, %q) = %d, SortKey order says %d", a.SortKey(), b.SortKey(), got, want)
			}
		}
	}
}
