package inventory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/utils/clock"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// Cleanup reasons.
const (
	ReasonCleanupFailed   = "CleanupFailed"
	ReasonCleanupTerminal = "CleanupTerminal"
	cleanupTimeout        = 30 * time.Second
)

// CleanupError is a failed cleanup; Terminal when every failure is one that
// retrying cannot fix.
type CleanupError struct {
	Terminal bool
	Msg      string
}

func (e *CleanupError) Error() string { return e.Msg }

// Reason is the Degraded reason for the error.
func (e *CleanupError) Reason() string {
	if e.Terminal {
		return ReasonCleanupTerminal
	}
	return ReasonCleanupFailed
}

// Cleanup clears what an inventory being deleted wrote (a deleted
// inventory leaves nothing behind in its sinks): every bound sink receives
// an empty snapshot, so
// databases delete the inventory's rows, event streams get a tombstone per
// row and Git loses the files the sink wrote. A sink object that no longer
// exists is cleared with the backend last built for it, when there is one
// (a namespace deleted at once takes sinks and Secrets with its
// inventories); with none it has nothing to clean (Q23). The engine must have stopped the inventory's
// actors first, so no export races this one.
func (r *Resolver) Cleanup(ctx context.Context, b Bindings, id rows.Identity) error {
	empty := rows.NewSnapshot(id, nil, r.now())
	var failures []string
	terminal := true
	for _, fam := range families(b.Refs) {
		for _, ref := range fam.refs {
			obj := fam.obj()
			ns := b.SinkNamespace(ref)
			key := fam.family + "/" + ref.Name
			if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, obj); err != nil {
				if !apierrors.IsNotFound(err) {
					failures, terminal = append(failures, fmt.Sprintf("%s/%s: %v", fam.family, ref.Name, err)), false
					continue
				}
				obj = nil
			}
			// A sink or Secret deleted with the inventory (its namespace
			// going) is cleared with the backend built before they went.
			backend := r.Backends.ForCleanup(ctx, r.Client, b.Owner+"|"+key, obj)
			if backend == nil {
				log.FromContext(ctx).Info("sink is gone and was not used since the manager started; nothing to clean", "sink", ns+"/"+ref.Name, "family", fam.family)
				continue
			}
			ectx, cancel := context.WithTimeout(ctx, cleanupTimeout)
			_, err := backend.Export(ectx, rows.Diff(nil, empty))
			cancel()
			if errors.Is(err, sinks.ErrForeignWriter) {
				// Another operator writes this inventory's rows in the
				// sink (it took them over): none of them are this one's.
				log.FromContext(ctx).Info("another operator writes this inventory in the sink; nothing of this operator's to clean", "sink", ns+"/"+ref.Name, "error", err.Error())
				continue
			}
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s: %v", key, err))
				terminal = terminal && errors.Is(err, sinks.ErrPermanent)
			}
		}
	}
	if len(failures) == 0 {
		return nil
	}
	return &CleanupError{Terminal: terminal, Msg: "clearing the inventory's data before deletion failed: " + strings.Join(failures, "; ")}
}

type family struct {
	family, kind string
	refs         []kollectv1alpha1.InventorySinkRef
	obj          func() client.Object
}

func families(refs kollectv1alpha1.SinkRefs) []family {
	return []family{
		{"snapshot", "KollectSnapshotSink", refs.SnapshotSinkRefs, func() client.Object { return &kollectv1alpha1.KollectSnapshotSink{} }},
		{"database", "KollectDatabaseSink", refs.DatabaseSinkRefs, func() client.Object { return &kollectv1alpha1.KollectDatabaseSink{} }},
		{"event", "KollectEventSink", refs.EventSinkRefs, func() client.Object { return &kollectv1alpha1.KollectEventSink{} }},
	}
}

// now is the time by the resolver's clock.
func (r *Resolver) now() time.Time {
	if r.Clock == nil {
		return clock.RealClock{}.Now()
	}
	return r.Clock.Now()
}
