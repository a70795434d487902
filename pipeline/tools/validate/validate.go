package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/tools/manifests"
)

// Problem is one finding: where, and what to fix.
type Problem struct {
	File    string
	Object  string // Kind namespace/name
	Field   string
	Message string
	Warning bool // reported, but the manifest is still valid
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Object != "" {
		b.WriteString(": " + p.Object)
	}
	if p.Field != "" {
		b.WriteString(": " + p.Field)
	}
	b.WriteString(": " + p.Message)
	return b.String()
}

// Result is what a validation found.
type Result struct {
	Problems []Problem
	// Objects counts the Kollect objects read, by kind.
	Objects map[string]int
}

// Invalid reports whether any problem is more than a warning.
func (r *Result) Invalid() bool {
	for _, p := range r.Problems {
		if !p.Warning {
			return true
		}
	}
	return false
}

// doc is one manifest document.
type doc struct {
	file string
	obj  *unstructured.Unstructured
}

func (d doc) name() string {
	if d.obj.GetNamespace() == "" {
		return d.obj.GetKind() + " " + d.obj.GetName()
	}
	return d.obj.GetKind() + " " + d.obj.GetNamespace() + "/" + d.obj.GetName()
}

// Paths validates every YAML or JSON file given, or directly inside a
// folder given. An error means the files could not be read at all.
func Paths(ctx context.Context, paths []string) (*Result, error) {
	files, err := manifests.Files(paths)
	if err != nil {
		return nil, err
	}
	sch, err := loadSchemas()
	if err != nil {
		return nil, fmt.Errorf("load the embedded CRDs: %w", err)
	}
	res := &Result{Objects: map[string]int{}}
	var docs []doc
	for _, f := range files {
		ds, probs := read(f)
		res.Problems = append(res.Problems, probs...)
		docs = append(docs, ds...)
	}
	v := &validator{schemas: sch, res: res, profiles: map[string]*kollectv1alpha1.KollectProfile{}}
	for _, d := range docs {
		v.object(ctx, d)
	}
	for _, d := range docs {
		v.references(d)
	}
	if err := v.policy(ctx, docs); err != nil {
		return nil, err
	}
	return res, nil
}

func read(file string) ([]doc, []Problem) {
	objs, err := manifests.ReadFile(file)
	out := make([]doc, len(objs))
	for i, u := range objs {
		out[i] = doc{file: file, obj: u}
	}
	if err != nil {
		return out, []Problem{{File: file, Message: "not valid YAML or JSON: " + err.Error()}}
	}
	return out, nil
}

type validator struct {
	schemas  schemas
	res      *Result
	profiles map[string]*kollectv1alpha1.KollectProfile // by namespace/name
	targets  []doc
}

// add records a problem, unless the same field of the same object already
// has one (the operator's compilers often restate a schema rule).
func (v *validator) add(d doc, fieldPath, msg string, warning bool) {
	for _, p := range v.res.Problems {
		if fieldPath != "" && p.File == d.file && p.Object == d.name() && p.Field == fieldPath {
			return
		}
	}
	msg = strings.Join(strings.Fields(msg), " ") // one line per problem
	v.res.Problems = append(v.res.Problems, Problem{File: d.file, Object: d.name(), Field: fieldPath, Message: msg, Warning: warning})
}

// object checks one document on its own: schema, CEL rules, expressions.
func (v *validator) object(ctx context.Context, d doc) {
	gv, err := schema.ParseGroupVersion(d.obj.GetAPIVersion())
	if err != nil || gv.Group != kollectv1alpha1.GroupVersion.Group {
		v.add(d, "", "not a kollect.dev object; skipped", true)
		return
	}
	ks := v.schemas[gv.WithKind(d.obj.GetKind())]
	if ks == nil {
		v.add(d, "kind", fmt.Sprintf("%s is not a kind of %s", d.obj.GetKind(), gv), false)
		return
	}
	v.res.Objects[d.obj.GetKind()]++
	if d.obj.GetName() == "" {
		v.add(d, "metadata.name", "required", false)
	} else if errs := validation.IsDNS1123Subdomain(d.obj.GetName()); len(errs) > 0 {
		v.add(d, "metadata.name", strings.Join(errs, "; "), false)
	}
	namespaced := !strings.HasPrefix(d.obj.GetKind(), "KollectCluster")
	if namespaced && d.obj.GetNamespace() == "" {
		d.obj.SetNamespace("default")
	}
	for _, e := range ks.check(ctx, d.obj.Object) {
		msg := e.Detail
		switch {
		case msg == "":
			msg = e.ErrorBody()
		case e.Type != field.ErrorTypeInvalid:
			msg = e.Type.String() + ": " + msg
		}
		v.add(d, e.Field, msg, false)
	}
	v.semantics(d)
}

// decode turns a document into its typed object.
func decode(d doc, into any) error {
	raw, err := json.Marshal(d.obj.Object)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, into)
}
