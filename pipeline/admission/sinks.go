package admission

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/backends"
	"kollect.dev/kollect/pipeline/scope"
	"kollect.dev/kollect/sinks/git"
)

// secretWarnings warns of the Secrets the operator reads for a sink
// (backends.SecretRefs, the same list the runtime reads) that lie outside
// its namespace where its scope does not allow them. A warning, not a
// refusal: the platform may grant the namespace later, and upstream samples
// name such Secrets.
func secretWarnings(ctx context.Context, c client.Reader, sink client.Object) []string {
	ns := sink.GetNamespace()
	var ceiling *scope.Ceiling
	looked := false
	var out []string
	for _, r := range backends.SecretRefs(sink) {
		if r.Namespace == "" || r.Namespace == ns {
			continue
		}
		if !looked {
			ceiling, _ = scope.Namespaced(ctx, c, ns)
			looked = true
		}
		if ceiling.AllowsSecretNamespace(ns, r.Namespace) {
			continue
		}
		out = append(out, fmt.Sprintf("Secret %s/%s is outside namespace %q: the operator reads it only if the KollectScope of %q lists %q in spec.allowedSecretNamespaces",
			r.Namespace, r.Name, ns, ns, r.Namespace))
	}
	return out
}

// common checks what every family sink shares: the interval floor of its
// namespace, its Secret references and the warnings upstream's webhooks
// give.
func common(ctx context.Context, c client.Reader, sink client.Object, s *kollectv1alpha1.SinkCommonFields) (warnings, problems []string) {
	ns := sink.GetNamespace()
	problems = floorProblems(ctx, c, ns, map[string]string{"spec.exportMinInterval": string(s.ExportMinInterval)})
	warnings = append(warnings, secretWarnings(ctx, c, sink)...)
	if s.Provisioning != nil && s.Provisioning.Mode == "existing" {
		warnings = append(warnings, "spec.provisioning.mode existing: the sink's table, topic or stream must exist; nothing is created")
	}
	if s.TLS != nil && s.TLS.InsecureSkipVerify {
		warnings = append(warnings, "spec.tls.insecureSkipVerify: server certificates are not verified; use only for development")
	}
	return warnings, problems
}

func (o Options) endpoint(field, raw string) []string {
	if raw == "" {
		return nil
	}
	if err := o.Policy.CheckAtAdmission(raw); err != nil {
		return []string{fmt.Sprintf("%s: %v", field, err)}
	}
	return nil
}

// snapshotSink: endpoint guard (bucket URIs carry no host), warnings,
// and the checks of the sink's type.
func snapshotSink(ctx context.Context, c client.Reader, o Options, s *kollectv1alpha1.KollectSnapshotSink) (warnings, problems []string) {
	warnings, problems = common(ctx, c, s, &s.Spec.SinkCommonFields)
	if ep := s.Spec.Endpoint; strings.Contains(ep, "://") && !strings.HasPrefix(ep, "s3://") && !strings.HasPrefix(ep, "gs://") && !strings.HasPrefix(ep, "azblob://") {
		problems = append(problems, o.endpoint("spec.endpoint", ep)...) // a bucket URI or a bare bucket carries no host
	}
	if ep := s.Spec.Endpoint; strings.HasPrefix(strings.ToLower(ep), "http://") && git.CredentialsRef(&s.Spec) != nil &&
		!strings.EqualFold(s.Annotations[git.AllowPlainHTTPCredentials], "true") {
		warnings = append(warnings, fmt.Sprintf("spec.endpoint is plain http:// and the sink has credentials: exports will refuse to send them "+
			"unless the sink is annotated %s: \"true\" (development servers only)", git.AllowPlainHTTPCredentials))
	}
	return o.typed(s, warnings, problems)
}

// typed adds the checks of the sink's own type (backends.Type.Admit).
func (o Options) typed(sink client.Object, warnings, problems []string) ([]string, []string) {
	w, p := backends.Admit(o.backends(), sink, o.endpoint)
	return append(warnings, w...), append(problems, p...)
}

// backends are the sink types admission knows: Backends, or this build's.
func (o Options) backends() []backends.Type {
	if o.Backends != nil {
		return o.Backends
	}
	return backends.Types()
}

// databaseSink: endpoint guard, warnings, and the checks of its type.
func databaseSink(ctx context.Context, c client.Reader, o Options, s *kollectv1alpha1.KollectDatabaseSink) (warnings, problems []string) {
	warnings, problems = common(ctx, c, s, &s.Spec.SinkCommonFields)
	problems = append(problems, o.endpoint("spec.endpoint", s.Spec.Endpoint)...)
	return o.typed(s, warnings, problems)
}

// eventSink: endpoint guard, warnings, and the checks of its type (every
// broker, the NATS URL).
func eventSink(ctx context.Context, c client.Reader, o Options, s *kollectv1alpha1.KollectEventSink) (warnings, problems []string) {
	warnings, problems = common(ctx, c, s, &s.Spec.SinkCommonFields)
	problems = append(problems, o.endpoint("spec.endpoint", s.Spec.Endpoint)...)
	return o.typed(s, warnings, problems)
}

// sinkLists: a scope's sink allow-lists hold names, not references.
func sinkLists(l kollectv1alpha1.ScopeSinkAllowList) (problems []string) {
	for _, list := range []struct {
		field string
		names []string
	}{{"snapshotSinkRefs", l.SnapshotSinkRefs}, {"databaseSinkRefs", l.DatabaseSinkRefs}, {"eventSinkRefs", l.EventSinkRefs}, {"sinkRefs", l.SinkRefs}} {
		field := list.field
		for i, n := range list.names {
			if strings.TrimSpace(n) == "" || strings.Contains(n, "/") {
				problems = append(problems, fmt.Sprintf("spec.%s[%d]: %q must be a sink name", field, i, n))
			}
		}
	}
	return problems
}

// connectionTest: exactly one sink reference, by name.
func connectionTest(_ context.Context, t *kollectv1alpha1.KollectConnectionTest) (warnings, problems []string) {
	set := 0
	for _, ref := range [][2]string{{"snapshotSinkRef", t.Spec.SinkRef.SnapshotSinkRef}, {"databaseSinkRef", t.Spec.SinkRef.DatabaseSinkRef},
		{"eventSinkRef", t.Spec.SinkRef.EventSinkRef}} {
		field, v := ref[0], ref[1]
		if v == "" {
			continue
		}
		set++
		if strings.Contains(v, "/") {
			problems = append(problems, fmt.Sprintf("spec.sinkRef.%s: %q must be a sink name in namespace %q", field, v, t.Namespace))
		}
	}
	if set != 1 {
		problems = append(problems, "spec.sinkRef: set exactly one of snapshotSinkRef, databaseSinkRef, eventSinkRef")
	}
	if strings.Contains(t.Spec.ProfileRef, "/") {
		problems = append(problems, "spec.profileRef: must be a name, without '/'")
	}
	return warnings, problems
}
