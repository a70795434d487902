package rows

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// Checksum is the lower-case hex SHA-256 of the compact JSON array of rows
// in the order given.
func Checksum(rs []*Row) string {
	h := sha256.New()
	h.Write([]byte{'['})
	writeItems(h, rs)
	h.Write([]byte{']'})
	return hex.EncodeToString(h.Sum(nil))
}

// itemsPiece is about how many bytes of JSON one piece of writeItems's
// output holds, and maxPieceRows the most rows: a piece is a buffer, and
// four are in use at once.
const (
	itemsPiece   = 256 << 10
	maxPieceRows = 2048
)

// pieceRows is how many rows a piece holds, from the size of the first
// rows' JSON.
func pieceRows(rs []*Row) int {
	n, size := min(len(rs), 16), 0
	for _, r := range rs[:n] {
		size += r.Size() + 1
	}
	if size == 0 {
		return maxPieceRows
	}
	return max(16, min(maxPieceRows, itemsPiece*n/size))
}

// writeItems writes the rows' JSON, separated by commas, to w in pieces
// of about itemsPiece bytes. With more than one piece per worker, the
// pieces are encoded on up to GOMAXPROCS workers ahead of the writer, which
// takes them in order. Encoding is most of the cost: an inventory's rows
// lie wherever they were allocated, so reading each row's JSON waits on
// memory (200,000 rows in canonical order took 104 ms to checksum on one
// core, 40 ms in the order they were allocated).
func writeItems(w io.Writer, rs []*Row) {
	per := pieceRows(rs)
	n := (len(rs) + per - 1) / per
	workers := min(runtime.GOMAXPROCS(0), n/2)
	if workers < 2 {
		var jw jsonWriter
		var b []byte
		for lo := 0; lo < len(rs); lo += per {
			b = appendItems(b[:0], &jw, rs[:min(lo+per, len(rs))], lo)
			_, _ = w.Write(b) // a hash never fails
		}
		return
	}
	type piece struct {
		b     []byte
		ready chan struct{}
	}
	pieces := make([]piece, n)
	for i := range pieces {
		pieces[i].ready = make(chan struct{})
	}
	// A worker takes a buffer before it takes a piece, so every piece
	// taken has one and the writer's next piece always completes; the
	// buffers bound how far the workers run ahead.
	free := make(chan []byte, 2*workers)
	for range cap(free) {
		free <- make([]byte, 0, itemsPiece*5/4)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var jw jsonWriter
			for {
				b := <-free
				i := int(next.Add(1) - 1)
				if i >= n {
					free <- b
					return
				}
				pieces[i].b = appendItems(b[:0], &jw, rs[:min((i+1)*per, len(rs))], i*per)
				close(pieces[i].ready)
			}
		})
	}
	for i := range pieces {
		<-pieces[i].ready
		_, _ = w.Write(pieces[i].b) // a hash never fails
		free <- pieces[i].b
		pieces[i].b = nil
	}
	wg.Wait()
}

// appendItems appends the JSON of rs[lo:], each row after a comma but the
// first of rs.
func appendItems(b []byte, jw *jsonWriter, rs []*Row, lo int) []byte {
	for i := lo; i < len(rs); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = jw.append(b, rs[i])
	}
	return b
}
