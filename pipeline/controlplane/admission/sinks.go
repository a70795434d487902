package admission

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/controlplane/scope"
	"kollect.dev/kollect/sinks/git"
)

// secretWarnings warns of Secret references the operator will refuse to
// read: outside the sink's namespace, where its scope does not allow them.
// (A warning, not a refusal: the platform may grant the namespace later,
// and upstream samples name such Secrets.)
func secretWarnings(ctx context.Context, c client.Reader, ns string, refs ...*kollectv1alpha1.SecretReference) []string {
	var out []string
	for _, r := range refs {
		if r == nil || r.Namespace == "" || r.Namespace == ns {
			continue
		}
		ceiling, err := scope.Namespaced(ctx, c, ns)
		if err == nil && ceiling.AllowsSecretNamespace(ns, r.Namespace) {
			continue
		}
		out = append(out, fmt.Sprintf("Secret %s/%s is outside namespace %q: the operator reads it only if the KollectScope of %q lists %q in spec.allowedSecretNamespaces",
			r.Namespace, r.Name, ns, ns, r.Namespace))
	}
	return out
}

// common checks what every family sink shares: the interval floor of its
// namespace, its Secret references and the warnings of API.md §5.
func common(ctx context.Context, c client.Reader, ns string, s *kollectv1alpha1.SinkCommonFields) (warnings, problems []string) {
	problems = floorProblems(ctx, c, ns, map[string]string{"spec.exportMinInterval": string(s.ExportMinInterval)})
	refs := []*kollectv1alpha1.SecretReference{s.SecretRef}
	if s.TLS != nil {
		refs = append(refs, s.TLS.CASecretRef)
	}
	warnings = append(warnings, secretWarnings(ctx, c, ns, refs...)...)
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

// snapshotSink: endpoint guard (bucket URIs carry no host), warnings.
func snapshotSink(ctx context.Context, c client.Reader, o Options, s *kollectv1alpha1.KollectSnapshotSink) (warnings, problems []string) {
	warnings, problems = common(ctx, c, s.Namespace, &s.Spec.SinkCommonFields)
	if ep := s.Spec.Endpoint; !strings.HasPrefix(ep, "s3://") && !strings.HasPrefix(ep, "gs://") {
		problems = append(problems, o.endpoint("spec.endpoint", ep)...)
	}
	if g := s.Spec.Git; g != nil {
		problems = append(problems, o.endpoint("spec.git.endpoint", g.Endpoint)...)
		if g.Auth != nil {
			warnings = append(warnings, secretWarnings(ctx, c, s.Namespace, g.Auth.SecretRef)...)
		}
		if g.PushPolicy == "ForcePush" {
			warnings = append(warnings, "spec.git.pushPolicy ForcePush rewrites the branch's history on every export")
		}
	}
	if ep := s.Spec.Endpoint; strings.HasPrefix(strings.ToLower(ep), "http://") && git.CredentialsRef(&s.Spec) != nil &&
		!strings.EqualFold(s.Annotations[git.AllowPlainHTTPCredentials], "true") {
		warnings = append(warnings, fmt.Sprintf("spec.endpoint is plain http:// and the sink has credentials: exports will refuse to send them "+
			"unless the sink is annotated %s: \"true\" (development servers only)", git.AllowPlainHTTPCredentials))
	}
	typ := s.Spec.Type
	if typ == "" || typ == "git" || typ == "gitlab" {
		format := ""
		if s.Spec.Serialization != nil {
			format = s.Spec.Serialization.Format
		}
		if format == "" {
			warnings = append(warnings, "git sinks write YAML unless spec.serialization.format says otherwise")
		}
		if strings.HasSuffix(s.Spec.PathTemplate, ".json") && format != "json" {
			warnings = append(warnings, "spec.pathTemplate ends in .json but the documents are not JSON")
		}
		if l := s.Spec.Layout; l != nil && (l.Mode == "perResource" || l.Mode == "split") {
			warnings = append(warnings, fmt.Sprintf("spec.layout.mode %s: files of objects that are gone are pruned", l.Mode))
		}
	}
	return warnings, problems
}

// databaseSink: endpoint guard, warnings.
func databaseSink(ctx context.Context, c client.Reader, o Options, s *kollectv1alpha1.KollectDatabaseSink) (warnings, problems []string) {
	warnings, problems = common(ctx, c, s.Namespace, &s.Spec.SinkCommonFields)
	problems = append(problems, o.endpoint("spec.endpoint", s.Spec.Endpoint)...)
	switch {
	case s.Spec.Postgres != nil:
		warnings = append(warnings, secretWarnings(ctx, c, s.Namespace, &s.Spec.Postgres.DatabaseRef)...)
	case s.Spec.MongoDB != nil:
		warnings = append(warnings, secretWarnings(ctx, c, s.Namespace, &s.Spec.MongoDB.DatabaseRef)...)
	case s.Spec.BigQuery != nil:
		warnings = append(warnings, secretWarnings(ctx, c, s.Namespace, s.Spec.BigQuery.SecretRef)...)
	}
	return warnings, problems
}

// eventSink: every broker and the NATS URL through the endpoint guard.
func eventSink(ctx context.Context, c client.Reader, o Options, s *kollectv1alpha1.KollectEventSink) (warnings, problems []string) {
	warnings, problems = common(ctx, c, s.Namespace, &s.Spec.SinkCommonFields)
	problems = append(problems, o.endpoint("spec.endpoint", s.Spec.Endpoint)...)
	if n := s.Spec.NATS; n != nil {
		problems = append(problems, o.endpoint("spec.nats.url", n.URL)...)
		warnings = append(warnings, secretWarnings(ctx, c, s.Namespace, n.SecretRef)...)
	}
	if k := s.Spec.Kafka; k != nil {
		warnings = append(warnings, secretWarnings(ctx, c, s.Namespace, k.SecretRef)...)
		for i, b := range k.Brokers {
			problems = append(problems, o.endpoint(fmt.Sprintf("spec.kafka.brokers[%d]", i), b)...)
		}
	}
	return warnings, problems
}

// sinkLists: a scope's sink allow-lists hold names, not references.
func sinkLists(l kollectv1alpha1.ScopeSinkAllowList) (problems []string) {
	for field, names := range map[string][]string{"snapshotSinkRefs": l.SnapshotSinkRefs, "databaseSinkRefs": l.DatabaseSinkRefs,
		"eventSinkRefs": l.EventSinkRefs, "sinkRefs": l.SinkRefs} {
		for i, n := range names {
			if strings.TrimSpace(n) == "" || strings.Contains(n, "/") {
				problems = append(problems, fmt.Sprintf("spec.%s[%d]: %q must be a sink name", field, i, n))
			}
		}
	}
	return problems
}

// connectionTest: exactly one sink reference, by name.
func connectionTest(_ context.Context, t *kollectv1alpha1.KollectConnectionTest) (warnings, problems []string) {
	refs := map[string]string{"snapshotSinkRef": t.Spec.SinkRef.SnapshotSinkRef, "databaseSinkRef": t.Spec.SinkRef.DatabaseSinkRef,
		"eventSinkRef": t.Spec.SinkRef.EventSinkRef}
	set := 0
	for field, v := range refs {
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
