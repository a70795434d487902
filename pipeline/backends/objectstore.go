package backends

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"gocloud.dev/blob"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
	"kollect.dev/kollect/sinks/objectstore"
)

func s3Type() Type {
	return Type{Family: "snapshot", Name: "s3", Admit: admitObjectStore, Preview: previewObjectStore("s3"), Verified: "bucket reachable with these credentials", Secret: specSecret,
		Build: func(ctx context.Context, obj client.Object, creds Credentials, env Env) (sinks.Backend, error) {
			return buildObjectStore(ctx, obj.(*kollectv1alpha1.KollectSnapshotSink), creds, env, "s3",
				func(ctx context.Context, e objectstore.Endpoint, hc *http.Client, s *kollectv1alpha1.KollectSnapshotSink) (*blob.Bucket, []string, error) {
					return objectstore.OpenS3(ctx, e, creds.Data, env.Ambient, s.Spec.Options["region"], hc)
				})
		}}
}

// gcsType reads a bucket through the native GCS API with a service-account
// key or Application Default Credentials, or, when the Secret holds HMAC
// keys, through GCS's S3-interoperable API (upstream's only form).
func gcsType() Type {
	return Type{Family: "snapshot", Name: "gcs", Admit: admitObjectStore, Preview: previewObjectStore("gs"), Verified: "bucket reachable with these credentials", Secret: specSecret,
		Build: func(ctx context.Context, obj client.Object, creds Credentials, env Env) (sinks.Backend, error) {
			return buildObjectStore(ctx, obj.(*kollectv1alpha1.KollectSnapshotSink), creds, env, "gs",
				func(ctx context.Context, e objectstore.Endpoint, hc *http.Client, s *kollectv1alpha1.KollectSnapshotSink) (*blob.Bucket, []string, error) {
					if objectstore.S3Keys(creds.Data) {
						if e.BaseURL == "" {
							e.BaseURL = "https://storage.googleapis.com"
						}
						region := s.Spec.Options["region"]
						if region == "" {
							region = "auto"
						}
						return objectstore.OpenS3(ctx, e, creds.Data, env.Ambient, region, hc)
					}
					b, err := objectstore.OpenGCS(ctx, e, creds.Data, env.Ambient, hc)
					return b, nil, err
				})
		}}
}

// azureType writes Azure Blob Storage with an account key, a SAS or a
// connection string from the Secret (a Kollect addition; upstream only
// plans it).
func azureType() Type {
	return Type{Family: "snapshot", Name: "azureblob", Admit: admitObjectStore, Preview: previewObjectStore(""), Verified: "container reachable with these credentials", Secret: specSecret,
		Build: func(ctx context.Context, obj client.Object, creds Credentials, env Env) (sinks.Backend, error) {
			s := obj.(*kollectv1alpha1.KollectSnapshotSink)
			t, err := objectstore.ParseAzure(s.Spec.Endpoint, creds.Data)
			if err != nil {
				return nil, sinks.Permanent(err)
			}
			if err := checkObjectStoreURL(ctx, s, creds, env, t.ContainerURL); err != nil {
				return nil, err
			}
			hc, err := sinks.HTTPClient(GuardedDial(env.Policy), creds.CA, s.Spec.TLS != nil && s.Spec.TLS.InsecureSkipVerify)
			if err != nil {
				return nil, sinks.Permanent(err)
			}
			bucket, redact, err := objectstore.OpenAzure(ctx, t, creds.Data, hc)
			if err != nil {
				return nil, sinks.Permanent(err)
			}
			return newStore(s, objectstore.Endpoint{Bucket: t.Container, Prefix: t.Prefix}, bucket, redact, env.Clock)
		}}
}

// specSecret is spec.secretRef, the Secret of the object-store types.
func specSecret(o client.Object) *kollectv1alpha1.SecretReference {
	return o.(*kollectv1alpha1.KollectSnapshotSink).Spec.SecretRef
}

type opener func(ctx context.Context, e objectstore.Endpoint, hc *http.Client, s *kollectv1alpha1.KollectSnapshotSink) (*blob.Bucket, []string, error)

// buildObjectStore checks the endpoint against the policy, builds the
// guarded HTTP client, opens the bucket and wraps it in the store.
func buildObjectStore(ctx context.Context, s *kollectv1alpha1.KollectSnapshotSink, creds Credentials, env Env, scheme string, open opener) (sinks.Backend, error) {
	e, err := objectstore.ParseEndpoint(s.Spec.Endpoint, scheme)
	if err != nil {
		return nil, sinks.Permanent(err)
	}
	if e.BaseURL != "" {
		if err := checkObjectStoreURL(ctx, s, creds, env, e.BaseURL); err != nil {
			return nil, err
		}
	}
	insecure := s.Spec.TLS != nil && s.Spec.TLS.InsecureSkipVerify
	hc, err := sinks.HTTPClient(GuardedDial(env.Policy), creds.CA, insecure)
	if err != nil {
		return nil, sinks.Permanent(err)
	}
	bucket, redact, err := open(ctx, e, hc, s)
	if err != nil {
		return nil, err
	}
	return newStore(s, e, bucket, redact, env.Clock)
}

// checkObjectStoreURL puts a custom endpoint through the endpoint policy
// and refuses credentials over plain http unless the sink allows it.
func checkObjectStoreURL(ctx context.Context, s *kollectv1alpha1.KollectSnapshotSink, creds Credentials, env Env, u string) error {
	if err := env.Policy.CheckURL(ctx, u, "https", "http"); err != nil {
		return err
	}
	if strings.HasPrefix(u, "http://") && len(creds.Data) > 0 && s.Annotations[git.AllowPlainHTTPCredentials] != "true" {
		return sinks.Permanent(fmt.Errorf("credentials would travel over plain http to %s: use https, or set the annotation %s: \"true\" on the sink (development only)",
			u, git.AllowPlainHTTPCredentials))
	}
	return nil
}

// newStore wraps an opened bucket in the store the sink spec describes.
func newStore(s *kollectv1alpha1.KollectSnapshotSink, e objectstore.Endpoint, bucket *blob.Bucket, redact []string, clk clock.PassiveClock) (sinks.Backend, error) {
	cfg := objectstore.FromSpec(s, e)
	cfg.Bucket, cfg.Redact = bucket, redact
	cfg.Name, cfg.Clock = s.Spec.Endpoint, clk
	// A bucket may be shared (by the platform's credentials, or ambient
	// ones): an inventory writes and deletes under its own namespace only.
	cfg.PinNamespace = true
	st, err := objectstore.New(cfg)
	if err != nil {
		_ = bucket.Close()
		return nil, err
	}
	return &store{Backend: sinks.Whole(st), st: st}, nil
}

// store exposes an object store's probe and Close through sinks.Whole.
type store struct {
	sinks.Backend
	st *objectstore.Store
}

func (s *store) Probe(ctx context.Context) error { return s.st.Probe(ctx) }
func (s *store) Close()                          { s.st.Close() }

// Claims returns the store's writer records.
func (s *store) Claims() sinks.Claims { return s.st }

// KeepsTargets asks the adapted backend.
func (s *store) KeepsTargets() bool { return sinks.KeepsTargets(s.Backend) }

// WantsParts asks the adapted backend.
func (s *store) WantsParts(snap *rows.Snapshot) bool { return sinks.WantsParts(s.Backend, snap) }
