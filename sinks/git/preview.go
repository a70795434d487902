package git

import (
	"strings"

	"kollect.dev/kollect/model/rows"
)

// Rendered is what an export of a snapshot would write, without a remote:
// the document path (document mode), up to three item paths (per-resource
// layouts), and the commit's subject and body.
type Rendered struct {
	Document    string
	SamplePaths []string
	Subject     string
	Body        string
	Mode        string // the effective layout mode
	Content     string
	Prune       bool
}

// Render renders snap as the sink configured by cfg would, for previews.
func Render(cfg Config, snap *rows.Snapshot) (Rendered, error) {
	cfg = cfg.withDefaults()
	l := cfg.Layout.resolve(snap)
	out := Rendered{Mode: l.Mode, Content: l.Content}
	if out.Mode == "" {
		out.Mode = "document"
	}
	if l.Mode == "perResource" {
		out.Prune = true
		for _, r := range snap.Rows {
			if len(out.SamplePaths) == 3 {
				break
			}
			p, err := l.itemPath(snap.Inventory, r)
			if err != nil {
				return out, err
			}
			out.SamplePaths = append(out.SamplePaths, p)
		}
	} else {
		doc, err := l.documentFile(snap.Inventory)
		if err != nil {
			return out, err
		}
		out.Document = doc
	}
	msg := strings.TrimSuffix((&Sink{cfg: cfg}).message(snap), "\n")
	out.Subject, out.Body, _ = strings.Cut(msg, "\n\n")
	return out, nil
}
