package familysink

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/controlplane/status"
	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks/git"
	"kollect.dev/kollect/sinks/mongodb"
	"kollect.dev/kollect/sinks/objectstore"
	"kollect.dev/kollect/sinks/postgres"
)

// PreviewAnnotation asks for status.preview.
const PreviewAnnotation = "kollect.dev/preview"

// sample is the synthetic inventory previews render: team-a/api,
// generation 1, one row.
func sample() *rows.Snapshot {
	r, _ := rows.New(rows.Row{
		Origin:    &rows.Origin{TargetNamespace: "team-a", TargetName: "deployments", Group: "apps", Version: "v1", Kind: "Deployment"},
		Namespace: "team-a", Name: "api", UID: "00000000-0000-0000-0000-000000000001"}, rows.AttributesOf(map[string]any{"image": "ghcr.io/example/api:1.0.0"}))
	return rows.NewSnapshot(rows.Identity{Namespace: "team-a", Name: "api", Generation: 1}, []*rows.Row{r}, time.Unix(0, 0).UTC())
}

// RenderPreview renders what a sink would write for the sample inventory.
func RenderPreview(obj client.Object) (*kollectv1alpha1.SinkPreviewStatus, error) {
	p := &kollectv1alpha1.SinkPreviewStatus{InputSampleSource: "synthetic", ProvisioningMode: "ensure", SerializationFormat: "json"}
	common := func(c *kollectv1alpha1.SinkCommonFields) {
		if c.Provisioning != nil && c.Provisioning.Mode != "" {
			p.ProvisioningMode = c.Provisioning.Mode
			if c.Provisioning.Mode == "existing" {
				p.Warnings = append(p.Warnings, "provisioning.mode existing: nothing is created; the target must exist")
			}
		}
		if c.TLS != nil && c.TLS.InsecureSkipVerify {
			p.Warnings = append(p.Warnings, "TLS certificate verification is disabled; use only for development")
		}
	}
	snap := sample()
	switch s := obj.(type) {
	case *kollectv1alpha1.KollectSnapshotSink:
		common(&s.Spec.SinkCommonFields)
		typ := s.Spec.Type
		if typ == "" {
			typ = "git"
		}
		if typ == "s3" || typ == "gcs" || typ == "azureblob" {
			var e objectstore.Endpoint
			var err error
			if typ == "azureblob" {
				var t objectstore.AzureTarget
				t, err = objectstore.ParseAzure(s.Spec.Endpoint, map[string][]byte{"accountName": []byte("account")})
				e = objectstore.Endpoint{Bucket: t.Container, Prefix: t.Prefix}
			} else {
				e, err = objectstore.ParseEndpoint(s.Spec.Endpoint, map[string]string{"s3": "s3", "gcs": "gs"}[typ])
			}
			if err != nil {
				return nil, err
			}
			paths, err := objectstore.Paths(objectstore.FromSpec(s, e), snap)
			if err != nil {
				return nil, err
			}
			p.ObjectPath = strings.Join(paths, ", ")
			return p, nil
		}
		if typ != "git" && typ != "gitlab" {
			p.Warnings = append(p.Warnings, typ+" sinks are not implemented in this version of Kollect")
			return p, nil
		}
		cfg, err := git.FromSink(s, nil, "")
		if err != nil {
			return nil, err
		}
		r, err := git.Render(cfg, snap)
		if err != nil {
			return nil, err
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
	case *kollectv1alpha1.KollectDatabaseSink:
		common(&s.Spec.SinkCommonFields)
		switch {
		case s.Spec.Postgres != nil:
			cfg := postgres.Config{Schema: string(s.Spec.Postgres.Schema), Table: string(s.Spec.Postgres.Table)}
			p.Postgres = &kollectv1alpha1.PostgresPreview{ExpectedDDL: postgres.ExpectedDDL(cfg)}
		case s.Spec.MongoDB != nil:
			p.MongoDB = &kollectv1alpha1.MongoDBPreview{ExpectedIndexKeys: slices.Clone(mongodb.IdentityIndex)}
		}
	case *kollectv1alpha1.KollectEventSink:
		common(&s.Spec.SinkCommonFields)
		if s.Spec.Kafka != nil {
			p.Kafka = &kollectv1alpha1.KafkaPreview{Topic: s.Spec.Kafka.Topic}
		}
	default:
		return nil, fmt.Errorf("no preview for %T", obj)
	}
	return p, nil
}

// ApplyPreview keeps status.preview in step with the annotation: rendered
// while it is "true", cleared when it goes. renderedAt moves only when the
// rendered content changes, so the status write does not re-render in a
// loop (the upstream quirk).
func ApplyPreview(ctx context.Context, c client.Client, obj client.Object, st *kollectv1alpha1.FamilySinkStatus, now time.Time) error {
	var want *kollectv1alpha1.SinkPreviewStatus
	if strings.EqualFold(strings.TrimSpace(obj.GetAnnotations()[PreviewAnnotation]), "true") {
		p, err := RenderPreview(obj)
		if err != nil {
			p = &kollectv1alpha1.SinkPreviewStatus{InputSampleSource: "synthetic", Warnings: []string{"preview: " + err.Error()}}
		}
		want = p
	}
	if sameContent(st.Preview, want) {
		return nil
	}
	base := obj.DeepCopyObject().(client.Object)
	if want != nil {
		at := metav1.NewTime(now)
		want.RenderedAt = &at
	}
	st.Preview = want
	return status.Patch(ctx, c, obj, base)
}

func sameContent(a, b *kollectv1alpha1.SinkPreviewStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.RenderedAt, y.RenderedAt = nil, nil
	return equality.Semantic.DeepEqual(x, y)
}
