package admission

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/controlplane/backends"
	"kollect.dev/kollect/pipeline/controlplane/scope"
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

// snapshotSink: endpoint guard (bucket URIs carry no host), warnings.
func snapshotSink(ctx context.Context, c client.Reader, o Options, s *kollectv1alpha1.KollectSnapshotSink) (warnings, problems []string) {
	warnings, problems = common(ctx, c, s, &s.Spec.SinkCommonFields)
	if ep := s.Spec.Endpoint; strings.Contains(ep, "://") && !strings.HasPrefix(ep, "s3://") && !strings.HasPrefix(ep, "gs://") && !strings.HasPrefix(ep, "azblob://") {
		problems = append(problems, o.endpoint("spec.endpoint", ep)...) // a bucket URI or a bare bucket carries no host
	}
	if g := s.Spec.Git; g != nil {
		problems = append(problems, o.endpoint("spec.git.endpoint", g.Endpoint)...)
		if g.PushPolicy == "ForcePush" {
			warnings = append(warnings, "spec.git.pushPolicy ForcePush rewrites the branch's history on every export")
		}
		if g.Engine == "cli" {
			warnings = append(warnings, "spec.git.engine cli: Kollect fetches and pushes with go-git, whatever the engine (its image has no git binary, "+
				"as upstream's distroless image had none); the commits and the branch are the same")
		}
	}
	if ep := s.Spec.Endpoint; strings.HasPrefix(strings.ToLower(ep), "http://") && git.CredentialsRef(&s.Spec) != nil &&
		!strings.EqualFold(s.Annotations[git.AllowPlainHTTPCredentials], "true") {
		warnings = append(warnings, fmt.Sprintf("spec.endpoint is plain http:// and the sink has credentials: exports will refuse to send them "+
			"unless the sink is annotated %s: \"true\" (development servers only)", git.AllowPlainHTTPCredentials))
	}
	typ := s.Spec.Type
	if typ == "s3" || typ == "gcs" || typ == "azureblob" {
		w, p := objectStoreSink(s)
		warnings, problems = append(warnings, w...), append(problems, p...)
	}
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

// objectStoreSink: what an object store can write (upstream's formats,
// with CSV and compression implemented here), and a warning for fleets.
func objectStoreSink(s *kollectv1alpha1.KollectSnapshotSink) (warnings, problems []string) {
	format, compression := "", ""
	if st := s.Spec.Serialization; st != nil {
		format, compression = st.Format, st.Compression
	}
	if store := s.Spec.ObjectStore; store != nil && store.Format == "parquet" {
		format = "parquet"
	}
	if format == "yaml" {
		problems = append(problems, "spec.serialization.format yaml: object stores write json (the default), ndjson, csv or parquet")
	}
	if compression == "snappy" && format != "parquet" {
		problems = append(problems, "spec.serialization.compression snappy applies to Parquet only: use gzip or zstd, or format parquet")
	}
	if l := s.Spec.Layout; l != nil && (l.Mode == "perResource" || l.Mode == "split") {
		warnings = append(warnings, fmt.Sprintf("spec.layout.mode %s: objects of rows that are gone are deleted", l.Mode))
	}
	tmpl := s.Spec.PathTemplate
	if l := s.Spec.Layout; l != nil && l.PathTemplate != "" {
		tmpl = l.PathTemplate
	}
	if s.Spec.Cluster != "" && format != "parquet" && !strings.Contains(tmpl, "{cluster}") {
		warnings = append(warnings, "spec.cluster is set but the object path has no {cluster}: clusters sharing this bucket would write the same objects; "+
			"add {cluster} to spec.pathTemplate")
	}
	return warnings, problems
}

// databaseSink: endpoint guard, warnings.
func databaseSink(ctx context.Context, c client.Reader, o Options, s *kollectv1alpha1.KollectDatabaseSink) (warnings, problems []string) {
	warnings, problems = common(ctx, c, s, &s.Spec.SinkCommonFields)
	problems = append(problems, o.endpoint("spec.endpoint", s.Spec.Endpoint)...)
	ep := strings.ToLower(s.Spec.Endpoint)
	switch {
	case ep == "":
	case s.Spec.Type != "bigquery":
		warnings = append(warnings, fmt.Sprintf("spec.endpoint is not used by %s sinks: the server's address is in the Secret's connection string", s.Spec.Type))
	case strings.HasPrefix(ep, "http://") && !strings.EqualFold(s.Annotations[git.AllowPlainHTTPCredentials], "true"):
		warnings = append(warnings, fmt.Sprintf("spec.endpoint is plain http://: BigQuery requests carry an access token, so exports will refuse it "+
			"unless the sink is annotated %s: \"true\" (emulators only)", git.AllowPlainHTTPCredentials))
	}
	return warnings, problems
}

// eventSink: every broker and the NATS URL through the endpoint guard.
func eventSink(ctx context.Context, c client.Reader, o Options, s *kollectv1alpha1.KollectEventSink) (warnings, problems []string) {
	warnings, problems = common(ctx, c, s, &s.Spec.SinkCommonFields)
	problems = append(problems, o.endpoint("spec.endpoint", s.Spec.Endpoint)...)
	if n := s.Spec.NATS; n != nil {
		problems = append(problems, o.endpoint("spec.nats.url", n.URL)...)
	}
	if k := s.Spec.Kafka; k != nil {
		for i, b := range k.Brokers {
			problems = append(problems, o.endpoint(fmt.Sprintf("spec.kafka.brokers[%d]", i), b)...)
		}
	}
	return warnings, problems
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
