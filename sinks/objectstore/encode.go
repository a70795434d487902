package objectstore

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	pqgzip "github.com/parquet-go/parquet-go/compress/gzip"
	pqsnappy "github.com/parquet-go/parquet-go/compress/snappy"
	pqzstd "github.com/parquet-go/parquet-go/compress/zstd"

	"kollect.dev/kollect/model/rows"
)

// Formats and compressions.
const (
	JSON    = "json"
	NDJSON  = "ndjson"
	CSV     = "csv"
	Parquet = "parquet"

	None   = "none"
	Gzip   = "gzip"
	Zstd   = "zstd"
	Snappy = "snappy"
)

// contentType is the MIME type of a format.
func contentType(format string) string {
	switch format {
	case NDJSON:
		return "application/x-ndjson"
	case CSV:
		return "text/csv"
	case Parquet:
		return "application/vnd.apache.parquet"
	}
	return "application/json"
}

// extension is the file extension of a format.
func extension(format string) string {
	switch format {
	case NDJSON:
		return ".ndjson"
	case CSV:
		return ".csv"
	case Parquet:
		return ".parquet"
	}
	return ".json"
}

// object is what one object holds before encoding.
type object struct {
	id   rows.Identity
	rows []*rows.Row
	// single: a perResource object, the row's own JSON (json format).
	single bool
	// index and total place a document split by the size ceiling among
	// its parts (0: not split).
	index, total int
}

// suffix is the part's name suffix, or "".
func (o object) suffix() string {
	return (&rows.Part{Index: o.index, Total: o.total}).Suffix()
}

// encoder turns objects into bytes in one format and compression.
type encoder struct {
	format, compression string
	cluster             string   // the sink's cluster, "default" when unset
	hot                 []string // Parquet attr_ columns: attribute names
	now                 func() time.Time
}

// encode renders o; the result is compressed as the encoder says (Parquet
// compresses its pages instead, so the file stays a Parquet file).
func (e *encoder) encode(o object) ([]byte, error) {
	var body []byte
	var err error
	switch e.format {
	case NDJSON:
		for _, r := range o.rows {
			body = append(r.AppendJSON(body), '\n')
		}
	case CSV:
		body, err = e.csv(o)
	case Parquet:
		return e.parquet(o)
	default:
		switch {
		case o.single && len(o.rows) == 1:
			body = o.rows[0].JSON()
		default:
			part := &rows.Part{Snapshot: rows.NewSnapshot(o.id, o.rows, e.now()), Index: o.index, Total: o.total}
			body = part.Envelope("")
		}
	}
	if err != nil {
		return nil, err
	}
	return e.compress(body)
}

// contentEncoding is the Content-Encoding header of compressed objects.
func (e *encoder) contentEncoding() string {
	if e.format == Parquet {
		return ""
	}
	switch e.compression {
	case Gzip:
		return "gzip"
	case Zstd:
		return "zstd"
	}
	return ""
}

// suffix is what compression adds to object names (Parquet: nothing).
func (e *encoder) suffix() string {
	switch e.contentEncoding() {
	case "gzip":
		return ".gz"
	case "zstd":
		return ".zst"
	}
	return ""
}

func (e *encoder) compress(body []byte) ([]byte, error) {
	switch e.contentEncoding() {
	case "gzip":
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		if _, err := w.Write(body); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	case "zstd":
		w, err := zstd.NewWriter(nil)
		if err != nil {
			return nil, err
		}
		defer w.Close()
		return w.EncodeAll(body, nil), nil
	}
	return body, nil
}

// identityColumns are the CSV columns before the attributes, in order.
var identityColumns = []string{"cluster", "inventory_namespace", "inventory_name", "target_namespace", "target_name",
	"namespace", "name", "uid", "group", "api_version", "kind"}

// csv writes a header of the identity columns and one column per
// attribute any row of the object has (sorted), then one line per row:
// strings as they are, other values as compact JSON, absent ones empty.
func (e *encoder) csv(o object) ([]byte, error) {
	names := map[string]bool{}
	decoded := make([]rows.Attributes, len(o.rows))
	for j, r := range o.rows {
		decoded[j] = r.Attributes()
		for _, a := range decoded[j] {
			names[a.Name] = true
		}
	}
	attrs := make([]string, 0, len(names))
	for k := range names {
		attrs = append(attrs, k)
	}
	sort.Strings(attrs)
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	header := append(append([]string(nil), identityColumns...), attrs...)
	if err := w.Write(header); err != nil {
		return nil, err
	}
	line := make([]string, len(header))
	for j, r := range o.rows {
		copy(line, []string{e.cluster, o.id.Namespace, o.id.Name, r.TargetNamespace, r.TargetName,
			r.Namespace, r.Name, r.UID, r.Group, r.Version, r.Kind})
		for i, a := range attrs {
			v, ok := decoded[j].Lookup(a)
			if !ok || v == nil {
				line[len(identityColumns)+i] = ""
				continue
			}
			s, err := cell(v)
			if err != nil {
				return nil, fmt.Errorf("row %s/%s attribute %q: %w", r.Namespace, r.Name, a, err)
			}
			line[len(identityColumns)+i] = s
		}
		if err := w.Write(line); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// cell formats an attribute value: strings as they are, booleans and
// numbers formatted, anything else as compact JSON.
func cell(v any) (string, error) {
	switch t := v.(type) {
	case string:
		return t, nil
	case bool:
		return strconv.FormatBool(t), nil
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), nil
	case int64:
		return strconv.FormatInt(t, 10), nil
	case int:
		return strconv.Itoa(t), nil
	case json.Number:
		return t.String(), nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// HotColumns turns objectStore.hotAttributes into Parquet column names:
// trimmed, de-duplicated case-insensitively, sorted;
// each column named attr_ + the lower-cased name with -, _ and . turned
// into _ and other characters dropped (unknown when nothing is left). It
// returns the attribute names and their columns, in the same order.
func HotColumns(names []string) (attrs, columns []string) {
	if names == nil {
		names = []string{"image", "version"}
	}
	seen := map[string]bool{}
	var keep []string
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" || seen[strings.ToLower(n)] {
			continue
		}
		seen[strings.ToLower(n)] = true
		keep = append(keep, n)
	}
	sort.Strings(keep)
	for _, n := range keep {
		var b strings.Builder
		for _, c := range strings.ToLower(n) {
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
				b.WriteRune(c)
			case c == '-' || c == '_' || c == '.':
				b.WriteByte('_')
			}
		}
		col := b.String()
		if col == "" {
			col = "unknown"
		}
		attrs, columns = append(attrs, n), append(columns, "attr_"+col)
	}
	return attrs, columns
}

// parquetSchema is upstream's Parquet schema: a flat group named inventory (the
// library stores a group's columns in alphabetical order).
func (e *encoder) parquetSchema() (*parquet.Schema, []string, []string) {
	g := parquet.Group{
		"cluster": parquet.String(), "inventory_namespace": parquet.String(), "inventory_name": parquet.String(),
		"target_namespace": parquet.String(), "target_name": parquet.String(), "namespace": parquet.String(),
		"name": parquet.String(), "uid": parquet.String(), "group": parquet.Optional(parquet.String()),
		"api_version": parquet.String(), "kind": parquet.String(), "exported_at": parquet.Timestamp(parquet.Microsecond),
		"attributes": parquet.Leaf(parquet.ByteArrayType),
	}
	attrs, cols := HotColumns(e.hot)
	for _, c := range cols {
		g[c] = parquet.Optional(parquet.String())
	}
	return parquet.NewSchema("inventory", g), attrs, cols
}

func (e *encoder) codec() compress.Codec {
	switch e.compression {
	case Gzip:
		return &pqgzip.Codec{}
	case Zstd:
		return &pqzstd.Codec{}
	case Snappy:
		return &pqsnappy.Codec{}
	}
	return nil
}

// parquet writes one Parquet row per item; exported_at is when the object
// is written.
func (e *encoder) parquet(o object) ([]byte, error) {
	schema, attrs, cols := e.parquetSchema()
	opts := []parquet.WriterOption{schema}
	if c := e.codec(); c != nil {
		opts = append(opts, parquet.Compression(c))
	}
	var b bytes.Buffer
	w := parquet.NewWriter(&b, opts...)
	at := e.now().UTC()
	for _, r := range o.rows {
		attrJSON, decoded := []byte(r.AttributesJSON()), r.Attributes()
		rec := map[string]any{
			"cluster": e.cluster, "inventory_namespace": o.id.Namespace, "inventory_name": o.id.Name,
			"target_namespace": r.TargetNamespace, "target_name": r.TargetName, "namespace": r.Namespace,
			"name": r.Name, "uid": r.UID, "group": nil, "api_version": r.Version, "kind": r.Kind,
			"exported_at": at, "attributes": attrJSON,
		}
		if r.Group != "" {
			rec["group"] = r.Group
		}
		for i, a := range attrs {
			rec[cols[i]] = nil
			if v, ok := decoded.Lookup(a); ok && v != nil {
				s, err := cell(v)
				if err != nil {
					return nil, err
				}
				if s != "" {
					rec[cols[i]] = s
				}
			}
		}
		if err := w.Write(rec); err != nil {
			return nil, fmt.Errorf("parquet row %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
