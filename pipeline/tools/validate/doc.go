// Package validate checks Kollect manifests offline with the rules the API
// server and the operator apply: the CRDs' OpenAPI schema and CEL rules
// (from the embedded, generated CRDs, with defaults applied first), unknown
// fields, JSONPath and CEL expressions in profiles, target selection, and
// the references that can be resolved within the given files. It needs no
// cluster.
package validate
