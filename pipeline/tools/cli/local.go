package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writeTo is the local sink (--output-dir): each target's export envelope
// is a file under dir at the record's path, under <context>/ when several
// contexts share the folder. A file whose envelope already holds the same
// rows for the same cluster (its checksum) is left alone, so a folder kept
// in Git or synced elsewhere changes only where the cluster did. A file is
// replaced whole (written beside it, then renamed), never left half
// written.
func (r *contextRun) writeTo(dir string, several, dryRun bool, stdout, log io.Writer) {
	r.writes = true
	for _, rec := range r.records {
		p := filepath.Join(dir, filepath.FromSlash(rec.Path))
		if several {
			p = filepath.Join(dir, r.name, filepath.FromSlash(rec.Path))
		}
		verb := "wrote"
		switch {
		case unchanged(p, rec.snap.Checksum, r.cluster):
			verb = "unchanged"
		case dryRun:
			verb = "dry run: would write"
		default:
			if err := writeFile(p, rec.Envelope); err != nil {
				fmt.Fprintf(log, "error: %s/%s: %v\n", rec.TargetNamespace, rec.TargetName, err)
				r.failed++
				continue
			}
		}
		r.exported++
		fmt.Fprintf(stdout, "%s %s (%d rows)\n", verb, p, len(rec.snap.Rows))
	}
}

// unchanged reports whether the file at p holds an envelope with this
// checksum and cluster (its export time aside).
func unchanged(p, checksum, cluster string) bool {
	old, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	type head struct {
		Checksum string `json:"checksum"`
		Cluster  string `json:"cluster"`
	}
	var h head
	if json.Unmarshal(old, &h) != nil {
		return false
	}
	return h == head{Checksum: checksum, Cluster: cluster}
}

func writeFile(p string, data []byte) error {
	// Rows may hold what only the kubeconfig's user could read: the files
	// and their folders are the user's alone.
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".kollect-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return os.Chmod(p, 0o600)
}
