package objectstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"k8s.io/utils/clock"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// Layouts: how rows are cut into objects.
const (
	Document    = "document"    // one object per inventory (default)
	Split       = "split"       // one object per source namespace
	PerResource = "perResource" // one object per row
)

// Config is one object-store sink.
type Config struct {
	// Bucket is opened by the caller with its driver and credentials; the
	// store closes it.
	Bucket *blob.Bucket
	// Name says what the bucket is in errors and probes (s3://b/prefix).
	Name string
	// Prefix is prepended to every key ("" or a/b, no slashes around).
	Prefix string
	// Cluster is the sink's cluster ("" writes "default").
	Cluster string
	// Format is json (the export envelope, default), ndjson, csv or
	// parquet; Compression none, gzip, zstd, or snappy (Parquet only).
	Format, Compression string
	// Layout is document (default), split or perResource.
	Layout string
	// PathTemplate names objects (see Paths); "" uses the layout's default.
	PathTemplate string
	// HotAttributes are the attributes that get a Parquet column of their
	// own (nil: image and version).
	HotAttributes []string
	// Redact are credential values removed from every error message.
	Redact []string
	// Clock stamps what the store writes: export and writer-record
	// times, Parquet row times (nil: the real clock).
	Clock clock.PassiveClock
	// PinNamespace requires every object key to hold the inventory's
	// namespace as a whole path segment (or the Hive segment ns=<it>), so
	// an inventory can never name, and so overwrite, another namespace's
	// objects in a shared bucket. Every sink built by the backend registry
	// (the operator's and the CLI's) sets it.
	PinNamespace bool
	// Parallel is how many objects an export writes or deletes at once
	// (0: 16).
	Parallel int
}

// The optional capabilities this backend has.
var (
	_ sinks.Prober = (*Store)(nil)
	_ sinks.Closer = (*Store)(nil)
	_ sinks.Keeper = (*Store)(nil)
)

// Store is an object-store snapshot backend.
type Store struct {
	cfg Config
	enc *encoder
}

// New checks cfg and returns its store.
func New(cfg Config) (*Store, error) {
	if cfg.Bucket == nil {
		return nil, errors.New("objectstore: no bucket")
	}
	return newStore(cfg)
}

// Paths lists the object keys an export of snap would write, for previews
// (cfg needs no bucket).
func Paths(cfg Config, snap *rows.Snapshot) ([]string, error) {
	s, err := newStore(cfg)
	if err != nil {
		return nil, err
	}
	objs, err := s.objects(snap, nil)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.key)
	}
	return out, nil
}

func newStore(cfg Config) (*Store, error) {
	cfg.Format = strings.ToLower(cfg.Format)
	if cfg.Format == "" {
		cfg.Format = JSON
	}
	if cfg.Compression == "" {
		cfg.Compression = None
	}
	if cfg.Layout == "" {
		cfg.Layout = Document
	}
	switch cfg.Format {
	case JSON, NDJSON, CSV, Parquet:
	default:
		return nil, sinks.Permanent(fmt.Errorf("format %q is not one an object store writes: use json, ndjson, csv or parquet", cfg.Format))
	}
	switch cfg.Compression {
	case None, Gzip, Zstd:
	case Snappy:
		if cfg.Format != Parquet {
			return nil, sinks.Permanent(fmt.Errorf("snappy compression applies to Parquet only; use gzip or zstd for %s", cfg.Format))
		}
	default:
		return nil, sinks.Permanent(fmt.Errorf("compression %q is not supported: use none, gzip, zstd or (Parquet) snappy", cfg.Compression))
	}
	switch cfg.Layout {
	case Document, Split, PerResource:
	default:
		return nil, sinks.Permanent(fmt.Errorf("layout mode %q is not one an object store writes: use document, split or perResource", cfg.Layout))
	}
	cfg.Clock = sinks.OrRealClock(cfg.Clock)
	if cfg.Parallel <= 0 {
		cfg.Parallel = 16
	}
	cfg.Prefix = strings.Trim(cfg.Prefix, "/")
	cluster := cfg.Cluster
	if cluster == "" {
		cluster = "default"
	}
	return &Store{cfg: cfg, enc: &encoder{format: cfg.Format, compression: cfg.Compression, cluster: cluster, hot: cfg.HotAttributes, now: cfg.Clock.Now}}, nil
}

// manifest is what the store writes last: every object of the export.
type manifest struct {
	SchemaVersion string           `json:"schemaVersion"`
	Namespace     string           `json:"inventoryNamespace"`
	Name          string           `json:"inventoryName"`
	Generation    int64            `json:"generation"`
	Cluster       string           `json:"cluster"`
	Checksum      string           `json:"checksum"`
	Settings      string           `json:"settings"`
	ExportedAt    time.Time        `json:"exportedAt"`
	ItemCount     int              `json:"itemCount"`
	PartTotal     int              `json:"partTotal,omitempty"` // document objects a split export wrote
	Objects       map[string]entry `json:"objects"`
}

// entry is one object of an export: a hash of the rows it holds (not of
// its bytes, which carry the export time) and how many.
type entry struct {
	Hash string `json:"hash"`
	Rows int    `json:"rows"`
	// Target names the target of a perResource object's row, so that a
	// partial export can leave a kept target's objects alone; "" in
	// other layouts and in manifests of earlier versions.
	Target string `json:"target,omitempty"`
}

// holds reports whether e describes the same content as o.
func (e entry) holds(o entry) bool { return e.Hash == o.Hash && e.Rows == o.Rows }

func (s *Store) metaKey(id rows.Identity, suffix string) string {
	return s.key(path.Join(".kollect", s.enc.cluster, id.Namespace, id.Name+suffix))
}

func (s *Store) key(p string) string {
	if s.cfg.Prefix == "" {
		return p
	}
	return s.cfg.Prefix + "/" + p
}

// settings is what, besides the rows, decides the bytes of objects: a
// change rewrites every object.
func (s *Store) settings() string {
	return strings.Join([]string{s.cfg.Format, s.cfg.Compression, s.cfg.Layout, s.cfg.PathTemplate, strings.Join(s.enc.hot, ","), s.enc.cluster}, "|")
}

// KeepsTargets reports whether a partial snapshot can be exported: in the
// perResource layout each object holds one row and the manifest names its
// target; a document or split object holds rows of every target.
func (s *Store) KeepsTargets() bool { return s.cfg.Layout == PerResource }

// Export makes the bucket hold snap: changed objects, then the manifest,
// then the deletes.
func (s *Store) Export(ctx context.Context, snap *rows.Snapshot) (sinks.Ack, error) {
	ack, err := s.export(ctx, snap, nil)
	return ack, s.redact(err)
}

// ExportParts is Export of a snapshot split by the binding's size ceiling:
// a document layout writes one object per part (the name carries
// .part-NNNN-of-MMMM); the manifest, written after them, names them all.
// Other layouts write objects of one row or one namespace, whatever the
// parts.
func (s *Store) ExportParts(ctx context.Context, snap *rows.Snapshot, parts []*rows.Part) (sinks.Ack, error) {
	ack, err := s.export(ctx, snap, parts)
	return ack, s.redact(err)
}

var _ sinks.Parted = (*Store)(nil)

// keyed is an object with its key and content hash.
type keyed struct {
	object
	key, hash string
}

// objects cuts snap into the layout's objects.
func (s *Store) objects(snap *rows.Snapshot, parts []*rows.Part) ([]keyed, error) {
	id := snap.Inventory
	var groups []object
	switch s.cfg.Layout {
	case Document:
		if len(parts) <= 1 {
			groups = []object{{id: id, rows: snap.Rows}}
			break
		}
		for _, p := range parts {
			groups = append(groups, object{id: id, rows: p.Rows, index: p.Index, total: p.Total})
		}
	case Split:
		byNS := map[string][]*rows.Row{}
		var order []string
		for _, r := range snap.Rows {
			if _, ok := byNS[r.Namespace]; !ok {
				order = append(order, r.Namespace)
			}
			byNS[r.Namespace] = append(byNS[r.Namespace], r)
		}
		slices.Sort(order)
		for _, ns := range order {
			groups = append(groups, object{id: id, rows: byNS[ns]})
		}
	case PerResource:
		groups = make([]object, 0, len(snap.Rows))
		for _, r := range snap.Rows {
			groups = append(groups, object{id: id, rows: []*rows.Row{r}, single: true})
		}
	}
	out := make([]keyed, 0, len(groups))
	seen := make(map[string]bool, len(groups))
	for _, g := range groups {
		k, err := s.objectKey(g)
		if err != nil {
			return nil, err
		}
		if seen[k] {
			return nil, fmt.Errorf("two objects of the export would be written at %q: add a variable that tells them apart to the path template ({uid}, {targetName}, {sourceNamespace})", k)
		}
		seen[k] = true
		h := sha256.New()
		if g.total > 0 {
			fmt.Fprintf(h, "part %d of %d\n", g.index, g.total) // the envelope says which part
		}
		var b []byte
		for _, r := range g.rows {
			b = append(r.AppendJSON(b[:0]), '\n')
			h.Write(b)
		}
		out = append(out, keyed{object: g, key: k, hash: hex.EncodeToString(h.Sum(nil))[:32]})
	}
	return out, nil
}

// unsafeSegment matches what a Hive-style path value may not contain.
var unsafeSegment = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func hive(v string) string { return unsafeSegment.ReplaceAllString(v, "_") }

// objectKey renders an object's key. Parquet documents use upstream's
// Hive-style path, inventory/cluster=<c>/ns=<ns>/name=<name>/generation=<g>
// (the path template does not apply).
func (s *Store) objectKey(o object) (string, error) {
	id := o.id
	ext := extension(s.cfg.Format) + s.enc.suffix()
	first := o.rows[0]
	if s.cfg.Format == Parquet && s.cfg.Layout != PerResource && s.cfg.PathTemplate == "" {
		p := fmt.Sprintf("inventory/cluster=%s/ns=%s/name=%s/generation=%d%s", hive(s.enc.cluster), hive(id.Namespace), hive(id.Name), id.Generation, o.suffix())
		if s.cfg.Layout == Split {
			p += "/source_namespace=" + hive(first.Namespace)
		}
		return s.key(p + ext), nil
	}
	tmpl := s.cfg.PathTemplate
	if tmpl == "" {
		switch s.cfg.Layout {
		case Split:
			tmpl = "inventory/{namespace}/{name}/{sourceNamespace}{extension}"
		case PerResource:
			tmpl = "inventory/{namespace}/{name}/{targetName}/{sourceNamespace}/{kind}/{sourceName}{extension}"
		default:
			tmpl = "inventory/{namespace}/{name}{extension}"
		}
	}
	if !strings.Contains(tmpl, "{extension}") {
		tmpl += s.enc.suffix() // a literal extension keeps its compression suffix
	}
	vars := []string{"{cluster}", s.enc.cluster, "{namespace}", id.Namespace, "{name}", id.Name + o.suffix(),
		"{generation}", strconv.FormatInt(id.Generation, 10), "{extension}", ext}
	if s.cfg.Layout != Document {
		vars = append(vars, "{sourceNamespace}", orDefault(first.Namespace, "_cluster")) // a cluster-scoped object
	}
	if s.cfg.Layout == PerResource {
		vars = append(vars, "{sourceName}", first.Name, "{kind}", strings.ToLower(first.Kind), "{group}", orDefault(first.Group, "core"),
			"{uid}", first.UID, "{targetNamespace}", first.TargetNamespace, "{targetName}", first.TargetName)
	}
	p := strings.NewReplacer(vars...).Replace(tmpl)
	if i := strings.IndexByte(p, '{'); i >= 0 && strings.IndexByte(p[i:], '}') > 0 {
		return "", fmt.Errorf("path template %q has a variable the %s layout does not know: %s", tmpl, s.cfg.Layout, p[i:i+strings.IndexByte(p[i:], '}')+1])
	}
	clean := path.Clean("/" + p)[1:]
	if clean == "" || strings.HasPrefix(clean, ".kollect/") || clean != p {
		return "", fmt.Errorf("path template %q renders %q, which is not a clean object path", tmpl, p)
	}
	if s.cfg.PinNamespace && !pinned(clean, id.Namespace) {
		return "", fmt.Errorf("path template %q renders %q, which does not hold the inventory's namespace %q as a path segment: "+
			"an inventory's objects live under its namespace, so no inventory can name another's (put {namespace} in a segment of its own)", tmpl, p, id.Namespace)
	}
	return s.key(clean), nil
}

// pinned reports whether key has namespace (or ns=<namespace>) as one of
// its segments.
func pinned(key, namespace string) bool {
	for _, seg := range strings.Split(key, "/") {
		if seg == namespace || seg == "ns="+hive(namespace) {
			return true
		}
	}
	return false
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func (s *Store) readJSON(ctx context.Context, key string, v any) (bool, error) {
	b, err := s.cfg.Bucket.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, sinks.Permanent(fmt.Errorf("%s is not a Kollect manifest (%w): remove it, or point the sink elsewhere", key, err))
	}
	return true, nil
}

func (s *Store) writeJSON(ctx context.Context, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := s.put(ctx, key, b, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// put writes one object from memory. It uploads from a reader rather than
// through a streaming writer: gocloud's Azure writer dereferences a nil
// pipe when an upload fails (gocloud.dev v0.47), and one request per
// object is all an export needs.
func (s *Store) put(ctx context.Context, key string, body []byte, opts *blob.WriterOptions) error {
	return s.cfg.Bucket.Upload(ctx, key, bytes.NewReader(body), opts)
}

// Probe checks that the bucket exists and the credentials can reach it.
func (s *Store) Probe(ctx context.Context) error {
	ok, err := s.cfg.Bucket.IsAccessible(ctx)
	if err != nil {
		return s.redact(fmt.Errorf("%s: %w", s.cfg.Name, err))
	}
	if !ok {
		return fmt.Errorf("%s: the bucket does not exist or these credentials cannot reach it", s.cfg.Name)
	}
	return nil
}

// Close releases the bucket.
func (s *Store) Close() { _ = s.cfg.Bucket.Close() }

// redact removes credential values from an error's message, keeping
// whether it is permanent.
func (s *Store) redact(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	changed := false
	for _, v := range s.cfg.Redact {
		if len(v) >= 4 && strings.Contains(msg, v) {
			msg, changed = strings.ReplaceAll(msg, v, "[REDACTED]"), true
		}
	}
	if !changed {
		return err
	}
	if errors.Is(err, sinks.ErrPermanent) {
		return sinks.Permanent(errors.New(msg))
	}
	return errors.New(msg)
}

func keys(m map[string]entry) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func union(a, b []string) []string {
	out := append(append([]string(nil), a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

func shortSum(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
