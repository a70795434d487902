package git

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"kollect.dev/kollect/model/rows"
)

// Files renders snap as the layout lays it out, path → content, without a
// repository: what a sink that writes through an API (GitLab) commits.
// Paths, templates and content are the Git sink's, so the two write the
// same tree.
// parts, when the binding's ceiling split the export, make a document
// layout write one document per part.
func (l Layout) Files(snap *rows.Snapshot, parts []*rows.Part) (map[string][]byte, error) {
	l = l.resolve(snap)
	out := map[string][]byte{}
	if l.Mode != "perResource" {
		for _, part := range wholeOr(snap, parts) {
			p, data, err := l.renderPart(part)
			if err != nil {
				return nil, err
			}
			out[p] = data
		}
		return out, nil
	}
	paths := make(map[*rows.Row]string, len(snap.Rows))
	for _, r := range snap.Rows {
		p, err := l.itemPath(snap.Inventory, r)
		if err != nil {
			return nil, err
		}
		if _, dup := out[p]; dup {
			return nil, fmt.Errorf("layout collision: two rows render to %s", p)
		}
		data, err := l.renderItem(r)
		if err != nil {
			return nil, err
		}
		out[p], paths[r] = data, p
	}
	if l.Index {
		p, data, err := l.renderIndex(snap, func(j int) string { return paths[snap.Rows[j]] })
		if err != nil {
			return nil, err
		}
		if _, dup := out[p]; dup {
			return nil, fmt.Errorf("layout collision: the index path %s is also an item path", p)
		}
		out[p] = data
	}
	return out, nil
}

// BlobID is the Git blob id of content (what GitLab's tree API reports).
func BlobID(content []byte) string {
	return plumbing.ComputeHash(plumbing.BlobObject, content).String()
}

// Message renders the commit subject of an export as the Git sink would.
func (cfg Config) Message(snap *rows.Snapshot) string {
	s := &Sink{cfg: cfg.withDefaults()}
	return s.message(snap)
}
