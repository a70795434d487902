package git

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"kollect.dev/kollect/model/rows"
)

// Layout says which files an export writes.
type Layout struct {
	Mode         string // document (default) or perResource
	Content      string // item (default), attributes or manifest
	Format       string // yaml (default), json or ndjson
	DocumentPath string // template; default inventory/{namespace}/{name}{extension}
	ItemPath     string // template; default {cluster}/{sourceNamespace}/{kind}/{sourceName}{extension}
	ManifestKey  string // attribute holding the manifest (default resource)
	Cluster      string
	MaxSegment   int
	KeepKindCase bool
	GroupInPath  string // auto (default), always, never
	Index        bool   // write an index of the item paths (split mode)
	IndexPath    string // template; default inventory/{namespace}/{name}{extension}
}

func (l Layout) extension() string {
	switch l.Format {
	case "json":
		return ".json"
	case "ndjson":
		return ".ndjson"
	}
	return ".yaml"
}

func (l Layout) cluster() string {
	if l.Cluster == "" {
		return "default"
	}
	return l.Cluster
}

// documentPath renders the inventory document's path.
func (l Layout) documentPath(id rows.Identity) string {
	tmpl := l.DocumentPath
	if tmpl == "" {
		tmpl = "inventory/{namespace}/{name}{extension}"
	}
	return strings.NewReplacer("{cluster}", l.cluster(), "{namespace}", id.Namespace, "{name}", id.Name,
		"{generation}", fmt.Sprint(id.Generation), "{extension}", l.extension()).Replace(tmpl)
}

var (
	separators = regexp.MustCompile(`[/\\:]+`)
	dots       = regexp.MustCompile(`\.{2,}`)
)

func (l Layout) segment(v string) string {
	v = strings.TrimSpace(v)
	v = separators.ReplaceAllString(v, "-")
	v = dots.ReplaceAllString(v, "-")
	v = strings.Trim(v, ".-")
	limit := l.MaxSegment
	if limit <= 0 {
		limit = 63
	}
	if len(v) > limit {
		v = strings.Trim(v[:limit], ".-")
	}
	return v
}

// itemPath renders one row's file path.
func (l Layout) itemPath(id rows.Identity, r *rows.Row) (string, error) {
	tmpl := l.ItemPath
	if tmpl == "" {
		tmpl = "{cluster}/{sourceNamespace}/{kind}/{sourceName}{extension}"
	}
	kind := r.Kind
	if !l.KeepKindCase {
		kind = strings.ToLower(kind)
	}
	group := r.Group
	if l.GroupInPath == "never" {
		group = ""
	}
	s := l.segment
	p := strings.NewReplacer(
		"{cluster}", s(l.cluster()), "{namespace}", s(id.Namespace), "{name}", s(id.Name),
		"{targetNamespace}", s(r.TargetNamespace), "{targetName}", s(r.TargetName),
		"{sourceNamespace}", s(r.Namespace), "{sourceName}", s(r.Name),
		"{group}", s(group), "{kind}", s(kind), "{uid}", s(r.UID),
		"{generation}", fmt.Sprint(id.Generation), "{extension}", l.extension(),
	).Replace(tmpl)
	clean, err := cleanPath(p)
	if err != nil {
		return "", fmt.Errorf("object %s/%s: %w", r.Namespace, r.Name, err)
	}
	return clean, nil
}

// KeepsTargets reports whether an export in this layout can leave one
// target's files as they are: a file per row (perResource) and no index
// naming them all. A document holds every target's rows.
func (l Layout) KeepsTargets() bool { return l.Mode == "perResource" && !l.Index }

// documentFile is documentPath checked: a path inside the repository.
func (l Layout) documentFile(id rows.Identity) (string, error) {
	return cleanPath(l.documentPath(id))
}

// reservedTop are top-level names that hosts and CI systems act on: an
// inventory must never write a workflow or a hook.
var reservedTop = map[string]bool{".github": true, ".gitlab": true, ".gitlab-ci.yml": true, ".gitea": true, ".forgejo": true,
	".circleci": true, ".woodpecker": true, ".woodpecker.yml": true, ".drone.yml": true, ".travis.yml": true, ".buildkite": true,
	".gitmodules": true, ".gitattributes": true, ".gitignore": true, ".githooks": true, ".husky": true}

// cleanPath turns a rendered template into a repository path: relative,
// without empty segments, and never leaving the repository's root (no "."
// or ".." segment, which a template or a value could otherwise produce).
func cleanPath(p string) (string, error) {
	var parts []string
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			continue
		case ".", "..":
			return "", fmt.Errorf("layout path %q has a %q segment", p, seg)
		}
		if strings.EqualFold(seg, ".git") {
			return "", fmt.Errorf("layout path %q writes into .git", p)
		}
		if len(parts) == 0 && reservedTop[strings.ToLower(seg)] {
			return "", fmt.Errorf("layout path %q writes into %s, which a repository's host or CI reads; choose another folder", p, seg)
		}
		parts = append(parts, seg)
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("layout path %q is empty", p)
	}
	return path.Join(parts...), nil
}

// renderItem encodes one row's file.
func (l Layout) renderItem(r *rows.Row) ([]byte, error) {
	var payload []byte
	switch l.Content {
	case "attributes":
		payload = []byte(r.AttributesJSON())
	case "manifest":
		key := l.ManifestKey
		if key == "" {
			key = "resource"
		}
		m, ok := r.Attributes().Lookup(key)
		if !ok {
			return nil, fmt.Errorf("row %s/%s has no %q attribute to write as a manifest", r.Namespace, r.Name, key)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		payload = b
	default:
		payload = r.JSON()
	}
	return encodeFile(l.Format, payload, true)
}

// wholeOr is the parts of an export, or the whole snapshot as one part.
func wholeOr(snap *rows.Snapshot, parts []*rows.Part) []*rows.Part {
	if len(parts) > 1 {
		return parts
	}
	return []*rows.Part{{Snapshot: snap}}
}

// renderPart renders one part's document and its path: the document's
// path with the part's suffix before the extension.
func (l Layout) renderPart(part *rows.Part) (string, []byte, error) {
	var (
		data []byte
		err  error
	)
	if l.Format == "json" {
		data = part.Envelope("")
	} else if data, err = l.renderDocument(part.Snapshot); err != nil {
		return "", nil, fmt.Errorf("render document: %w", err)
	}
	p, err := l.documentFile(part.Inventory)
	if err != nil {
		return "", nil, err
	}
	return partPath(p, part.Suffix()), data, nil
}

// partPath puts a part suffix before a path's extension.
func partPath(p, suffix string) string {
	if suffix == "" {
		return p
	}
	ext := path.Ext(p)
	if strings.Contains(ext, "/") {
		ext = ""
	}
	return strings.TrimSuffix(p, ext) + suffix + ext
}

// partName matches a part suffix and the extension after it.
var partName = regexp.MustCompile(`^\.part-[0-9]{4,}-of-[0-9]{4,}$`)

// isPartOf reports whether p is a part file of the document doc.
func isPartOf(doc, p string) bool {
	ext := path.Ext(doc)
	base := strings.TrimSuffix(doc, ext)
	rest, ok := strings.CutPrefix(p, base)
	if !ok || !strings.HasSuffix(rest, ext) {
		return false
	}
	return partName.MatchString(strings.TrimSuffix(rest, ext))
}

// renderDocument encodes the whole snapshot as one document.
func (l Layout) renderDocument(snap *rows.Snapshot) ([]byte, error) {
	switch l.Format {
	case "json":
		return snap.Envelope(""), nil
	case "ndjson":
		var b []byte
		for _, r := range snap.Rows {
			b = append(r.AppendJSON(b), '\n')
		}
		return b, nil
	}
	b := []byte{'['}
	for i, r := range snap.Rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = r.AppendJSON(b)
	}
	return yaml.JSONToYAML(append(b, ']'))
}

func encodeFile(format string, payload []byte, indentJSON bool) ([]byte, error) {
	switch format {
	case "ndjson":
		return append(append([]byte(nil), payload...), '\n'), nil
	case "json":
		var v any
		if err := json.Unmarshal(payload, &v); err != nil {
			return nil, err
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return nil, err
		}
		return append(b, '\n'), nil
	}
	return yaml.JSONToYAML(payload)
}

// renderIndex encodes the split-mode index: what was exported and where.
func (l Layout) renderIndex(snap *rows.Snapshot, pathOf func(j int) string) (string, []byte, error) {
	paths := make([]string, len(snap.Rows))
	for j := range snap.Rows {
		paths[j] = pathOf(j)
	}
	idx := struct {
		SchemaVersion string   `json:"schemaVersion"`
		ItemCount     int      `json:"itemCount"`
		Checksum      string   `json:"checksum"`
		ExportedAt    string   `json:"exportedAt"`
		Cluster       string   `json:"cluster"`
		Paths         []string `json:"paths"`
	}{rows.SchemaVersion, len(snap.Rows), snap.Checksum, snap.ExportedAt.Format(time.RFC3339), l.cluster(), paths}
	payload, err := json.Marshal(idx)
	if err != nil {
		return "", nil, err
	}
	data, err := encodeFile(l.Format, payload, true)
	if err != nil {
		return "", nil, err
	}
	ip := l
	ip.DocumentPath = l.IndexPath
	p, err := ip.documentFile(snap.Inventory)
	return p, data, err
}

// resolve is the layout for snap: with no mode set, rows of a
// Resource-export profile (whose rows carry apiVersion and kind) become a
// manifest tree, as upstream detects them.
func (l Layout) resolve(snap *rows.Snapshot) Layout {
	if l.Mode == "" {
		if key, ok := manifestKey(snap); ok {
			l.Mode, l.Content, l.ManifestKey = "perResource", "manifest", key
		}
	}
	return l
}

// manifestKey finds the attribute holding an embedded manifest when every
// row has exactly one such attribute (an object with an apiVersion and the
// row's kind), under the same key.
func manifestKey(snap *rows.Snapshot) (string, bool) {
	if len(snap.Rows) == 0 {
		return "", false
	}
	key := ""
	for _, r := range snap.Rows {
		found := ""
		if !strings.Contains(r.AttributesJSON(), `"apiVersion":`) {
			return "", false // no manifest: its attributes need no decoding
		}
		for _, a := range r.Attributes() {
			m, ok := a.Value.(map[string]any)
			if !ok {
				continue
			}
			av, _ := m["apiVersion"].(string)
			kind, _ := m["kind"].(string)
			if av != "" && strings.EqualFold(kind, r.Kind) {
				if found != "" {
					return "", false
				}
				found = a.Name
			}
		}
		if found == "" || (key != "" && found != key) {
			return "", false
		}
		key = found
	}
	return key, true
}

// ownedPrefix is the directory every item path starts with: the item
// template with the sink- and inventory-wide placeholders filled in, up to
// the first per-row placeholder. Empty when rows may land anywhere.
func (l Layout) ownedPrefix(id rows.Identity) string {
	tmpl := l.ItemPath
	if tmpl == "" {
		tmpl = "{cluster}/{sourceNamespace}/{kind}/{sourceName}{extension}"
	}
	fixed := strings.NewReplacer("{cluster}", l.segment(l.cluster()), "{namespace}", l.segment(id.Namespace),
		"{name}", l.segment(id.Name), "{generation}", fmt.Sprint(id.Generation)).Replace(tmpl)
	if i := strings.Index(fixed, "{"); i >= 0 {
		fixed = fixed[:i]
	}
	i := strings.LastIndex(fixed, "/")
	if i <= 0 {
		return ""
	}
	return fixed[:i+1]
}

// prefixIsOwn reports whether a fixed item prefix names the inventory
// (both its namespace and its name appear as path segments).
func (l Layout) prefixIsOwn(id rows.Identity, prefix string) bool {
	segs := strings.Split(strings.Trim(prefix, "/"), "/")
	ns, name := false, false
	for _, s := range segs {
		ns = ns || s == l.segment(id.Namespace)
		name = name || s == l.segment(id.Name)
	}
	return ns && name
}
