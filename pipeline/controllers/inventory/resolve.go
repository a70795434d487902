package inventory

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/actors/sink"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/controllers"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
)

// Resolver turns an inventory's sink references into bindings. It is
// shared by the namespaced and the cluster inventory reconcilers.
type Resolver struct {
	Client   client.Client
	Backends *Backends
}

// Bindings describes what to resolve: the owner ("namespace/name", which
// keys backends and metrics), its references, where each referenced sink
// lives and the owner's default interval.
type Bindings struct {
	Owner         string
	Refs          kollectv1alpha1.SinkRefs
	SinkNamespace func(ref kollectv1alpha1.InventorySinkRef) string
	Interval      string
}

// Resolve loads every bound sink. A missing sink degrades the whole
// inventory (reason returned); a sink that cannot be used becomes a binding
// whose exports fail with the reason, so its status says what to fix while
// the other bindings keep exporting.
func (r *Resolver) Resolve(ctx context.Context, b Bindings) ([]sink.Config, string, error) {
	var out []sink.Config
	for _, ref := range b.Refs.SnapshotSinkRefs {
		var s kollectv1alpha1.KollectSnapshotSink
		if reason, err := r.get(ctx, b.SinkNamespace(ref), ref.Name, "KollectSnapshotSink", &s); err != nil {
			return nil, reason, err
		}
		key := "snapshot/" + ref.Name
		typ := s.Spec.Type
		if typ == "" && s.Spec.Git != nil {
			typ = "git"
		}
		out = append(out, sink.Config{Inventory: b.Owner, Key: key, Type: typ, Backend: r.snapshotBackend(ctx, b.Owner+"|"+key, typ, &s),
			Interval: interval(ref.ExportMinInterval, string(s.Spec.ExportMinInterval), b.Interval)})
	}
	for _, ref := range b.Refs.DatabaseSinkRefs {
		var s kollectv1alpha1.KollectDatabaseSink
		if reason, err := r.get(ctx, b.SinkNamespace(ref), ref.Name, "KollectDatabaseSink", &s); err != nil {
			return nil, reason, err
		}
		out = append(out, r.unavailable(b.Owner, "database/"+ref.Name, s.Spec.Type, ref.ExportMinInterval, string(s.Spec.ExportMinInterval), b.Interval))
	}
	for _, ref := range b.Refs.EventSinkRefs {
		var s kollectv1alpha1.KollectEventSink
		if reason, err := r.get(ctx, b.SinkNamespace(ref), ref.Name, "KollectEventSink", &s); err != nil {
			return nil, reason, err
		}
		out = append(out, r.unavailable(b.Owner, "event/"+ref.Name, s.Spec.Type, ref.ExportMinInterval, string(s.Spec.ExportMinInterval), b.Interval))
	}
	return out, "", nil
}

func (r *Resolver) get(ctx context.Context, ns, name, kind string, obj client.Object) (string, error) {
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
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

func (r *Resolver) unavailable(inv, key, typ string, intervals ...string) sink.Config {
	msg := fmt.Sprintf("%s sinks are not implemented in this version of Kollect", typ)
	return sink.Config{Inventory: inv, Key: key, Type: typ, Backend: r.Backends.failing(inv+"|"+key, msg), Interval: interval(intervals...)}
}

func (r *Resolver) snapshotBackend(ctx context.Context, owner, typ string, s *kollectv1alpha1.KollectSnapshotSink) sinks.Snapshot {
	secret, secretVersion, err := r.secret(ctx, s)
	if err != nil {
		return r.Backends.failing(owner, err.Error())
	}
	b, err := r.Backends.snapshot(ctx, owner, typ, s, secret, secretVersion)
	if err != nil {
		return r.Backends.failing(owner, err.Error())
	}
	return b
}

// secret reads the sink's credentials Secret.
func (r *Resolver) secret(ctx context.Context, s *kollectv1alpha1.KollectSnapshotSink) (map[string][]byte, string, error) {
	return controllers.ReadSecret(ctx, r.Client, git.CredentialsRef(&s.Spec), s.Namespace)
}
