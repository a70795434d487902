package rows_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"kollect.dev/kollect/model/rows"
)

// TestChecksumOfManyRows: the checksum of rows encoded in pieces, on
// several workers for large slices, is the SHA-256 of json.Marshal of
// the same rows, for sizes around the pieces' boundaries: 2,048 small rows
// a piece, or 64 rows of 4 KB.
func TestChecksumOfManyRows(t *testing.T) {
	small := sortRows(t, 5*2048+7, 3)
	rows.Sort(small)
	large := make([]*rows.Row, 0, 1000)
	for i := range cap(large) {
		large = append(large, mustRow(t, rows.Row{Origin: &rows.Origin{Version: "v1", Kind: "ConfigMap"}, Namespace: "ns", Name: fmt.Sprintf("cm-%04d", i), UID: fmt.Sprint(i)},
			rows.Attributes{{Name: "data", Value: strings.Repeat("x", 4000)}}))
	}
	for _, tc := range []struct {
		all []*rows.Row
		n   int
	}{{small, 0}, {small, 1}, {small, 2047}, {small, 2048}, {small, 2049}, {small, 4096}, {small, 4097}, {small, 3*2048 + 1}, {small, len(small)},
		{large, 63}, {large, 64}, {large, 65}, {large, 255}, {large, 257}, {large, len(large)}} {
		t.Run(fmt.Sprintf("%d of %d B", tc.n, tc.all[0].Size()), func(t *testing.T) {
			rs := tc.all[:tc.n]
			n := tc.n
			js, err := json.Marshal(rs)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(js)
			if got, want := rows.Checksum(rs), hex.EncodeToString(sum[:]); got != want {
				t.Fatalf("checksum of %d rows is %s, the SHA-256 of their JSON %s", n, got, want)
			}
		})
	}
}
