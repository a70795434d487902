// Package crds embeds the generated CustomResourceDefinitions (written by
// `make generate`), so tools such as `kollect validate` check manifests
// with exactly the schema and CEL rules the API server enforces.
package crds

import "embed"

// FS holds every kollect.dev CRD manifest.
//
//go:embed *.yaml
var FS embed.FS
