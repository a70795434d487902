package rows_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"

	"kollect.dev/kollect/pipeline/model/rows"
)

// TestChecksumOfManyRows: the checksum of rows encoded in pieces, on
// several workers for large slices, is the SHA-256 of json.Marshal of
// the same rows, for sizes around the pieces' boundaries.
func TestChecksumOfManyRows(t *testing.T) {
	all := sortRows(t, 5*2048+7, 3)
	rows.Sort(all)
	for _, n := range []int{0, 1, 2047, 2048, 2049, 4096, 4097, 3*2048 + 1, len(all)} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rs := all[:n]
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
