package familysink

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/pipeline/backends"
	"kollect.dev/kollect/pipeline/status"
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

// RenderPreview renders what a sink would write for the sample inventory:
// what every sink shares here, the rest by its type (backends.Type.Preview)
// among types.
func RenderPreview(types []backends.Type, obj client.Object) (*kollectv1alpha1.SinkPreviewStatus, error) {
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
	switch s := obj.(type) {
	case *kollectv1alpha1.KollectSnapshotSink:
		common(&s.Spec.SinkCommonFields)
	case *kollectv1alpha1.KollectDatabaseSink:
		common(&s.Spec.SinkCommonFields)
	case *kollectv1alpha1.KollectEventSink:
		common(&s.Spec.SinkCommonFields)
	default:
		return nil, fmt.Errorf("no preview for %T", obj)
	}
	if err := backends.Preview(types, obj, sample(), p); err != nil {
		return nil, err
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
		p, err := RenderPreview(backends.Types(), obj)
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
