package inventory

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/actors/sink"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/backends"
	"kollect.dev/kollect/pipeline/controllers"
)

// Resolver turns an inventory's sink references into bindings. It is
// shared by the namespaced and the cluster inventory reconcilers.
type Resolver struct {
	Client   client.Client
	Backends *backends.Cache
	// Clock is the manager's (nil: the real clock).
	Clock clock.PassiveClock
	// MaxBytes is the operator's export ceiling (--max-export-bytes), for
	// bindings whose reference and inventory set none.
	MaxBytes int64
	// Timeout and TimeoutPerRow bound each export (0: the sink actor's
	// defaults): see sink.Config.
	Timeout, TimeoutPerRow time.Duration
	// Metrics counts the references resolved (nil: none).
	Metrics *controllers.Metrics
}

// Bindings describes what to resolve: the owner ("namespace/name", which
// keys backends and metrics), its references, where each referenced sink
// lives and the owner's default interval.
type Bindings struct {
	Owner string
	// OwnerKind is the owner's kind (KollectInventory or
	// KollectClusterInventory), for metrics.
	OwnerKind     string
	Refs          kollectv1alpha1.SinkRefs
	SinkNamespace func(ref kollectv1alpha1.InventorySinkRef) string
	Interval      string
	// Floor is the scope's minimum export interval: shorter intervals are
	// raised to it.
	Floor time.Duration
	// MaxBytes is the owner's export ceiling (spec.maxExportBytes), or nil.
	MaxBytes *int64
}

// Resolve loads every bound sink. A missing sink degrades the whole
// inventory (reason returned); a sink that cannot be used becomes a binding
// whose exports fail with the reason, so its status says what to fix while
// the other bindings keep exporting.
func (r *Resolver) Resolve(ctx context.Context, b Bindings) ([]sink.Config, string, error) {
	var out []sink.Config
	for _, fam := range families(b.Refs) {
		for _, ref := range fam.refs {
			obj := fam.obj()
			if reason, err := r.get(ctx, b.OwnerKind, b.SinkNamespace(ref), ref.Name, fam.kind, obj); err != nil {
				return nil, reason, err
			}
			key := fam.family + "/" + ref.Name
			_, typ := backends.Kind(obj)
			backend, id := r.Backends.Bound(ctx, r.Client, b.Owner+"|"+key, obj)
			out = append(out, sink.Config{Inventory: b.Owner, Key: key, Type: typ, Backend: backend, BackendID: id,
				Interval:    max(b.Floor, interval(ref.ExportMinInterval, sinkInterval(obj), b.Interval)),
				MaxBytes:    ceiling(ref.MaxExportBytes, b.MaxBytes, r.MaxBytes),
				Partitioned: fam.family == "snapshot", Timeout: r.Timeout, TimeoutPerRow: r.TimeoutPerRow})
		}
	}
	if err := ctx.Err(); err != nil {
		// A backend built meanwhile fails for that reason, not its sink's.
		return nil, "", err
	}
	return out, "", nil
}

// ceiling is a binding's size ceiling: the reference's,
// else the inventory's, else the operator's; a value above the operator's
// (admission refuses them; one written before the flag was lowered) is
// held to it.
func ceiling(ref, inv *int64, global int64) int64 {
	for _, v := range []*int64{ref, inv} {
		if v != nil && *v > 0 {
			if global > 0 {
				return min(*v, global)
			}
			return *v
		}
	}
	return global
}

func sinkInterval(obj client.Object) string {
	switch s := obj.(type) {
	case *kollectv1alpha1.KollectSnapshotSink:
		return string(s.Spec.ExportMinInterval)
	case *kollectv1alpha1.KollectDatabaseSink:
		return string(s.Spec.ExportMinInterval)
	case *kollectv1alpha1.KollectEventSink:
		return string(s.Spec.ExportMinInterval)
	}
	return ""
}

// refTypes are the ref_type labels of the sink kinds.
var refTypes = map[string]string{"KollectSnapshotSink": "snapshot", "KollectDatabaseSink": "database", "KollectEventSink": "event"}

func (r *Resolver) get(ctx context.Context, owner, ns, name, kind string, obj client.Object) (string, error) {
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
	r.Metrics.RefResolved(owner, refTypes[kind], err)
	switch {
	case err == nil:
		return "", nil
	case apierrors.IsNotFound(err):
		return ReasonSinkNotFound, fmt.Errorf("%s %q not found in namespace %q", kind, name, ns)
	case apierrors.IsForbidden(err):
		return "SinkForbidden", fmt.Errorf("reading %s %q: %w", kind, name, err)
	}
	return "", err
}
