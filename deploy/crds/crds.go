// Package crds embeds the generated CustomResourceDefinitions (written by
// `make generate`), so tools such as `kollect validate` check manifests
// with exactly the schema and CEL rules the API server enforces.
package crds

import (
	"embed"
	"io/fs"
)

// FS holds every kollect.dev CRD manifest.
//
//go:embed *.yaml
var FS embed.FS

// Each calls fn with every CRD manifest's file name and content, in name
// order, and stops at the first error.
func Each(fn func(name string, data []byte) error) error {
	files, err := fs.Glob(FS, "*.yaml")
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := FS.ReadFile(f)
		if err != nil {
			return err
		}
		if err := fn(f, data); err != nil {
			return err
		}
	}
	return nil
}
