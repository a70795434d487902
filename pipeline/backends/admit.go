package backends

import (
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/sinks/git"
)

// EndpointCheck checks one address a sink names against the endpoint
// guard at admission: the problems that refuse it, each naming field.
type EndpointCheck func(field, raw string) []string

// Admit runs the admission checks of sink's own type, if this build has
// it: warnings, and problems that refuse the sink. The checks every sink
// of a family shares run in the webhook beside these.
func Admit(types []Type, sink client.Object, check EndpointCheck) (warnings, problems []string) {
	t, err := Find(types, sink)
	if err != nil {
		return nil, nil // the export says so; admission leaves room for a newer operator
	}
	return t.Admit(sink, check)
}

func snapshotSpec(o client.Object) *kollectv1alpha1.KollectSnapshotSinkSpec {
	return &o.(*kollectv1alpha1.KollectSnapshotSink).Spec
}

// admitGit checks what Git and GitLab sinks share: the remote, the push
// policy and engine, and the documents' format.
func admitGit(sink client.Object, check EndpointCheck) (warnings, problems []string) {
	spec := snapshotSpec(sink)
	if g := spec.Git; g != nil {
		problems = append(problems, check("spec.git.endpoint", g.Endpoint)...)
		if g.PushPolicy == "ForcePush" {
			warnings = append(warnings, "spec.git.pushPolicy ForcePush rewrites the branch's history on every export")
		}
		if g.Engine == "cli" {
			warnings = append(warnings, "spec.git.engine cli: Kollect fetches and pushes with go-git, whatever the engine (its image has no git binary, "+
				"as upstream's distroless image had none); the commits and the branch are the same")
		}
	}
	format := ""
	if spec.Serialization != nil {
		format = spec.Serialization.Format
	}
	if format == "" {
		warnings = append(warnings, "git sinks write YAML unless spec.serialization.format says otherwise")
	}
	if strings.HasSuffix(spec.PathTemplate, ".json") && format != "json" {
		warnings = append(warnings, "spec.pathTemplate ends in .json but the documents are not JSON")
	}
	if l := spec.Layout; l != nil && (l.Mode == "perResource" || l.Mode == "split") {
		warnings = append(warnings, fmt.Sprintf("spec.layout.mode %s: files of objects that are gone are pruned", l.Mode))
	}
	return warnings, problems
}

// admitObjectStore checks what an object store can write (upstream's
// formats, with CSV and compression implemented here), and warns of
// clusters that would share objects.
func admitObjectStore(sink client.Object, _ EndpointCheck) (warnings, problems []string) {
	spec := snapshotSpec(sink)
	format, compression := "", ""
	if st := spec.Serialization; st != nil {
		format, compression = st.Format, st.Compression
	}
	if store := spec.ObjectStore; store != nil && store.Format == "parquet" {
		format = "parquet"
	}
	if format == "yaml" {
		problems = append(problems, "spec.serialization.format yaml: object stores write json (the default), ndjson, csv or parquet")
	}
	if compression == "snappy" && format != "parquet" {
		problems = append(problems, "spec.serialization.compression snappy applies to Parquet only: use gzip or zstd, or format parquet")
	}
	if l := spec.Layout; l != nil && (l.Mode == "perResource" || l.Mode == "split") {
		warnings = append(warnings, fmt.Sprintf("spec.layout.mode %s: objects of rows that are gone are deleted", l.Mode))
	}
	tmpl := spec.PathTemplate
	if l := spec.Layout; l != nil && l.PathTemplate != "" {
		tmpl = l.PathTemplate
	}
	if spec.Cluster != "" && format != "parquet" && !strings.Contains(tmpl, "{cluster}") {
		warnings = append(warnings, "spec.cluster is set but the object path has no {cluster}: clusters sharing this bucket would write the same objects; "+
			"add {cluster} to spec.pathTemplate")
	}
	return warnings, problems
}

// admitConnectionString: PostgreSQL and MongoDB sinks find their server
// in the Secret's connection string, never in spec.endpoint.
func admitConnectionString(sink client.Object, _ EndpointCheck) (warnings, problems []string) {
	s := sink.(*kollectv1alpha1.KollectDatabaseSink)
	if s.Spec.Endpoint != "" {
		warnings = append(warnings, fmt.Sprintf("spec.endpoint is not used by %s sinks: the server's address is in the Secret's connection string", s.Spec.Type))
	}
	return warnings, nil
}

// admitBigQuery: requests carry an access token, so a plain http endpoint
// is for emulators only.
func admitBigQuery(sink client.Object, _ EndpointCheck) (warnings, problems []string) {
	s := sink.(*kollectv1alpha1.KollectDatabaseSink)
	if strings.HasPrefix(strings.ToLower(s.Spec.Endpoint), "http://") && !strings.EqualFold(s.Annotations[git.AllowPlainHTTPCredentials], "true") {
		warnings = append(warnings, fmt.Sprintf("spec.endpoint is plain http://: BigQuery requests carry an access token, so exports will refuse it "+
			"unless the sink is annotated %s: \"true\" (emulators only)", git.AllowPlainHTTPCredentials))
	}
	return warnings, nil
}

// admitNATS: the server URL through the endpoint guard.
func admitNATS(sink client.Object, check EndpointCheck) (warnings, problems []string) {
	if n := sink.(*kollectv1alpha1.KollectEventSink).Spec.NATS; n != nil {
		problems = check("spec.nats.url", n.URL)
	}
	return nil, problems
}

// admitKafka: every seed broker through the endpoint guard.
func admitKafka(sink client.Object, check EndpointCheck) (warnings, problems []string) {
	if k := sink.(*kollectv1alpha1.KollectEventSink).Spec.Kafka; k != nil {
		for i, b := range k.Brokers {
			problems = append(problems, check(fmt.Sprintf("spec.kafka.brokers[%d]", i), b)...)
		}
	}
	return nil, problems
}
