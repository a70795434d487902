//go:build conformance

package conformance_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"kollect.dev/kollect/pipeline/tools/validate"
)

// TestValidateAgreesWithTheAPIServer runs `kollect validate`'s checks on
// every corpus file offline: a file the target behaviour accepts has no
// problem, and every document it rejects is flagged on the same field.
func TestValidateAgreesWithTheAPIServer(t *testing.T) {
	for _, rel := range corpusFiles(t) {
		t.Run(rel, func(t *testing.T) {
			res, err := validate.Paths(context.Background(), []string{filepath.Join(corpusDir, rel)})
			if err != nil {
				t.Fatal(err)
			}
			var flagged []string
			for _, p := range res.Problems {
				if !p.Warning {
					flagged = append(flagged, p.Object+" "+p.Field)
				}
			}
			var want []string
			for _, r := range cases[rel].rejects {
				obj := r.kind + " " + r.name
				if ns := namespaceOf(t, rel, r.kind, r.name); ns != "" {
					obj = fmt.Sprintf("%s %s/%s", r.kind, ns, r.name)
				}
				want = append(want, obj+" "+r.field)
				if !slices.Contains(flagged, obj+" "+r.field) {
					t.Errorf("the API server rejects %s on %s; validate does not flag it (problems: %v)", obj, r.field, res.Problems)
				}
			}
			for _, f := range flagged {
				if !slices.ContainsFunc(want, func(w string) bool { return sameObject(w, f) }) {
					t.Errorf("validate flags %s, which the API server accepts (problems: %v)", f, res.Problems)
				}
			}
		})
	}
}

// namespaceOf reads the namespace of a document in a corpus file
// (defaulted as validate defaults it).
func namespaceOf(t *testing.T, rel, kind, name string) string {
	docs, err := readDocs(filepath.Join(corpusDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if d.GetKind() == kind && d.GetName() == name {
			return d.GetNamespace()
		}
	}
	return ""
}

// sameObject: an object the API server rejects may be flagged on several
// fields by validate (the server reports the first).
func sameObject(want, flagged string) bool {
	wo, fo := want[:lastSpace(want)], flagged[:lastSpace(flagged)]
	return wo == fo
}

func lastSpace(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ' ' {
			return i
		}
	}
	return len(s)
}
