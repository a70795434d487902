package collect

import (
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/projection"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/model/selection"
)

// Evaluator is a compiled target.
type Evaluator struct {
	TargetNamespace string
	TargetName      string
	// PerNamespace gives each row the object's namespace as its target
	// namespace (cluster targets).
	PerNamespace bool
	ProfileGVK   schema.GroupVersionKind
	Selection    *selection.Set
	Extractor    *extract.Extractor

	// origins are the rows' shared parts, one per target namespace and
	// kind (a per-namespace target has one per namespace); Row runs on
	// several workers at once.
	origins sync.Map // originKey → *rows.Origin
	// mismatched counts, by kind, the objects whose namespace the target
	// does not read (TakeMismatches).
	mismatched sync.Map // schema.GroupVersionKind → *atomic.Int64
}

type originKey struct {
	targetNamespace string
	gvk             schema.GroupVersionKind
}

// origin returns the Origin of rows of gvk for targetNamespace, the same
// one every time.
func (e *Evaluator) origin(targetNamespace string, gvk schema.GroupVersionKind) *rows.Origin {
	k := originKey{targetNamespace, gvk}
	if o, ok := e.origins.Load(k); ok {
		return o.(*rows.Origin)
	}
	o, _ := e.origins.LoadOrStore(k, &rows.Origin{TargetNamespace: targetNamespace, TargetName: e.TargetName,
		Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind})
	return o.(*rows.Origin)
}

// ForgetNamespace drops the origins of a per-namespace target's rows in a
// namespace that is gone: a cluster whose CI makes and deletes namespaces
// all day would otherwise keep one per namespace the target ever saw. A
// row still holding one keeps it; a namespace made again gets a new one.
func (e *Evaluator) ForgetNamespace(namespace string) {
	if !e.PerNamespace {
		return
	}
	e.origins.Range(func(k, _ any) bool {
		if k.(originKey).targetNamespace == namespace {
			e.origins.Delete(k)
		}
		return true
	})
}

// Origins counts the origins held, for tests.
func (e *Evaluator) Origins() int {
	n := 0
	e.origins.Range(func(any, any) bool { n++; return true })
	return n
}

// Reads is the part of an object Row reads: identity and selection
// metadata, the rules' policies and the profile's attributes. Objects
// reduced to it give the same rows.
func (e *Evaluator) Reads() *projection.Set {
	s := projection.Base()
	s.Merge(e.Selection.Reads())
	s.Merge(e.Extractor.Reads())
	return s
}

// NamespaceLookup returns a namespace's metadata, or nil when unknown.
type NamespaceLookup func(name string) *unstructured.Unstructured

// TakeMismatches returns how many objects of each kind Row turned away by
// their namespace since the last call (kollect_collect_namespace_mismatch_total),
// and starts counting again.
func (e *Evaluator) TakeMismatches() map[schema.GroupVersionKind]int {
	var out map[schema.GroupVersionKind]int
	e.mismatched.Range(func(k, v any) bool {
		if n := v.(*atomic.Int64).Swap(0); n > 0 {
			if out == nil {
				out = map[schema.GroupVersionKind]int{}
			}
			out[k.(schema.GroupVersionKind)] = int(n)
		}
		return true
	})
	return out
}

// Row evaluates obj, read as kind gvk. It returns nil without an error when
// the target does not select the object, and an error when a required
// attribute fails.
func (e *Evaluator) Row(gvk schema.GroupVersionKind, obj *unstructured.Unstructured, namespaces NamespaceLookup) (*rows.Row, error) {
	// The identity is read once, as GetNamespace, GetName and GetUID read
	// it (a string or nothing); each of those walks the maps again.
	md, _ := obj.Object["metadata"].(map[string]any)
	objNS, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	uid, _ := md["uid"].(string)
	// Cluster-scoped objects are tested as if they lived in "default";
	// their rows keep an empty namespace.
	ns := objNS
	if ns == "" {
		ns = "default"
	}
	info := selection.NamespaceOf(ns, namespaces(ns))
	if !e.Selection.NamespaceMatches(info) {
		n, ok := e.mismatched.Load(gvk)
		if !ok {
			n, _ = e.mismatched.LoadOrStore(gvk, new(atomic.Int64))
		}
		n.(*atomic.Int64).Add(1)
		return nil, nil
	}
	if !e.Selection.ObjectMatches(gvk, name, selection.MetadataMap(obj, "labels"), &info, obj.Object) {
		return nil, nil
	}
	attrs, err := e.Extractor.Extract(obj.Object)
	if err != nil {
		return nil, err
	}
	rowGVK := e.ProfileGVK
	if len(e.Selection.Rules) > 0 {
		rowGVK = gvk
	}
	targetNS := e.TargetNamespace
	if e.PerNamespace {
		targetNS = objNS
	}
	row, err := rows.New(rows.Row{Origin: e.origin(targetNS, rowGVK), Namespace: objNS, Name: name, UID: uid}, attrs)
	if err != nil {
		return nil, fmt.Errorf("row: %w", err)
	}
	return row, nil
}
