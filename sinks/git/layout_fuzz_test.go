package git

import (
	"path"
	"strings"
	"testing"

	"kollect.dev/kollect/model/rows"
)

// FuzzLayoutPaths renders item and document paths from arbitrary templates
// and object fields: every path rendered is relative, clean and inside the
// repository, or the render fails.
func FuzzLayoutPaths(f *testing.F) {
	f.Add("{cluster}/{sourceNamespace}/{kind}/{sourceName}{extension}", "default", "web", "Deployment", "inventory/{namespace}/{name}{extension}")
	f.Add("../{sourceName}", "..", "..", "..", "../../{name}")
	f.Add("/{sourceNamespace}//{sourceName}", "a/../b", "c\\d", "K:ind", "/abs/{name}")
	f.Add("{uid}/.{sourceName}", ".", "...", "", "./{namespace}/./x")
	f.Fuzz(func(t *testing.T, itemTmpl, ns, name, kind, docTmpl string) {
		l := Layout{Mode: "perResource", ItemPath: itemTmpl, DocumentPath: docTmpl}
		r, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: ns, TargetName: name, Kind: kind, Version: "v1"}, Namespace: ns, Name: name, UID: name}, nil)
		if err != nil {
			return
		}
		id := rows.Identity{Namespace: ns, Name: name}
		if p, err := l.itemPath(id, r); err == nil {
			checkInside(t, p)
		}
		if p, err := l.documentFile(id); err == nil {
			checkInside(t, p)
		}
	})
}

func checkInside(t *testing.T, p string) {
	t.Helper()
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../") {
		t.Fatalf("rendered path %q leaves the repository or is not clean", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			t.Fatalf("rendered path %q has segment %q", p, seg)
		}
	}
}
