package manager

import (
	"context"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IssueWebhookCertificate is what a manager start does when no webhook
// certificate is mounted: issue one, sign it with the shared CA and
// publish the CA. It returns the directory of the certificate.
func IssueWebhookCertificate(ctx context.Context, cfg *rest.Config, o Options) (string, error) {
	scheme, err := NewScheme()
	if err != nil {
		return "", err
	}
	s, err := newSelfSigned(ctx, cfg, scheme, o)
	if err != nil {
		return "", err
	}
	return s.dir, nil
}

// WriterID is this operator's writer id for the --writer-id value flag.
func WriterID(ctx context.Context, c client.Reader, flag string) (string, error) {
	return writerID(ctx, c, flag)
}
