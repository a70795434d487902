package backends

import (
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/git"
	"kollect.dev/kollect/sinks/mongodb"
	"kollect.dev/kollect/sinks/objectstore"
	"kollect.dev/kollect/sinks/postgres"
)

// Preview fills p with what sink would write for snap, through its type's
// Preview; a type this build does not have leaves a warning saying so.
func Preview(types []Type, sink client.Object, snap *rows.Snapshot, p *kollectv1alpha1.SinkPreviewStatus) error {
	t, err := Find(types, sink)
	if err != nil {
		p.Warnings = append(p.Warnings, err.Error())
		return nil
	}
	return t.Preview(sink, snap, p)
}

// previewGit renders the sample as the Git layout writes it: the paths,
// the document and the commit message (GitLab writes the same layout).
func previewGit(sink client.Object, snap *rows.Snapshot, p *kollectv1alpha1.SinkPreviewStatus) error {
	s := sink.(*kollectv1alpha1.KollectSnapshotSink)
	cfg, err := git.FromSink(s, nil, "")
	if err != nil {
		return err
	}
	r, err := git.Render(cfg, snap)
	if err != nil {
		return err
	}
	p.SerializationFormat = cfg.Layout.Format
	p.ObjectPath = r.Document
	if p.ObjectPath == "" && len(r.SamplePaths) > 0 {
		p.ObjectPath = r.SamplePaths[0]
	}
	p.Git = &kollectv1alpha1.GitPreview{SampleCommitSubject: r.Subject, SampleCommitBody: r.Body}
	p.Layout = &kollectv1alpha1.LayoutPreview{Mode: r.Mode, Content: r.Content, Prune: r.Prune, SamplePaths: r.SamplePaths}
	if s.Spec.Serialization == nil || s.Spec.Serialization.Format == "" {
		p.Warnings = append(p.Warnings, "git sinks write YAML unless serialization.format says otherwise")
	}
	return nil
}

// previewObjectStore names the objects the sample would be written to;
// scheme is the endpoint's URI scheme (s3, gs), or "" for Azure.
func previewObjectStore(scheme string) func(client.Object, *rows.Snapshot, *kollectv1alpha1.SinkPreviewStatus) error {
	return func(sink client.Object, snap *rows.Snapshot, p *kollectv1alpha1.SinkPreviewStatus) error {
		s := sink.(*kollectv1alpha1.KollectSnapshotSink)
		var e objectstore.Endpoint
		if scheme == "" {
			t, err := objectstore.ParseAzure(s.Spec.Endpoint, map[string][]byte{"accountName": []byte("account")})
			if err != nil {
				return err
			}
			e = objectstore.Endpoint{Bucket: t.Container, Prefix: t.Prefix}
		} else {
			var err error
			if e, err = objectstore.ParseEndpoint(s.Spec.Endpoint, scheme); err != nil {
				return err
			}
		}
		paths, err := objectstore.Paths(objectstore.FromSpec(s, e), snap)
		if err != nil {
			return err
		}
		p.ObjectPath = strings.Join(paths, ", ")
		return nil
	}
}

// previewPostgres shows the table the sink creates.
func previewPostgres(sink client.Object, _ *rows.Snapshot, p *kollectv1alpha1.SinkPreviewStatus) error {
	pg := databaseSpec(sink).Postgres
	cfg := postgres.Config{}
	if pg != nil {
		cfg.Schema, cfg.Table = string(pg.Schema), string(pg.Table)
	}
	p.Postgres = &kollectv1alpha1.PostgresPreview{ExpectedDDL: postgres.ExpectedDDL(cfg)}
	return nil
}

// previewMongoDB shows the index the sink ensures.
func previewMongoDB(_ client.Object, _ *rows.Snapshot, p *kollectv1alpha1.SinkPreviewStatus) error {
	p.MongoDB = &kollectv1alpha1.MongoDBPreview{ExpectedIndexKeys: slices.Clone(mongodb.IdentityIndex)}
	return nil
}

// previewBigQuery names the table the rows are merged into.
func previewBigQuery(sink client.Object, _ *rows.Snapshot, p *kollectv1alpha1.SinkPreviewStatus) error {
	if bq := databaseSpec(sink).BigQuery; bq != nil {
		p.ObjectPath = bq.Project + "." + bq.Dataset + "." + bq.Table
	}
	return nil
}

// previewNATS names the subject the messages are published on.
func previewNATS(sink client.Object, _ *rows.Snapshot, p *kollectv1alpha1.SinkPreviewStatus) error {
	if n := sink.(*kollectv1alpha1.KollectEventSink).Spec.NATS; n != nil {
		p.ObjectPath = n.Subject
	}
	return nil
}

// previewKafka names the topic the records are produced to.
func previewKafka(sink client.Object, _ *rows.Snapshot, p *kollectv1alpha1.SinkPreviewStatus) error {
	if k := sink.(*kollectv1alpha1.KollectEventSink).Spec.Kafka; k != nil {
		p.Kafka = &kollectv1alpha1.KafkaPreview{Topic: k.Topic}
	}
	return nil
}
