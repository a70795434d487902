package messages

import (
	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"

	"kollect.dev/kollect/model/rows"
)

// TargetRef names a target: kind ("KollectTarget"), namespace and name.
type TargetRef struct {
	Kind, Namespace, Name string
}

func (t TargetRef) String() string { return t.Kind + ":" + t.Namespace + "/" + t.Name }

// Subscribe asks a Target actor to send its rows to Inventory. The target
// answers with a full RowsChanged (Replace set) and then sends changes. A
// non-nil TargetNamespaces limits the rows to those target namespaces; a
// new Subscribe from the same inventory replaces its filter.
type Subscribe struct {
	Inventory        *actor.PID
	TargetNamespaces map[string]bool
}

// Unsubscribe ends a subscription.
type Unsubscribe struct{ Inventory *actor.PID }

// RowsChanged carries a target's row changes. With Replace set, Upserts is
// the target's complete row set and every other row of the target is gone.
type RowsChanged struct {
	Target  TargetRef
	Upserts []*rows.Row
	Deletes []rows.Key
	Replace bool
	// More says the target has more events waiting behind this change: it
	// hands a burst over in slices, and an inventory may wait for the
	// burst's end before it exports.
	More bool
	// Trace is the collect span that produced the change (invalid when
	// tracing is off); the export that ships it links to it.
	Trace trace.SpanContext
}

// TargetGone tells inventories that a target stopped: its rows are gone.
type TargetGone struct{ Target TargetRef }
