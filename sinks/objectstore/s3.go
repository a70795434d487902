package objectstore

import (
	"context"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"

	"kollect.dev/kollect/sinks"
)

// S3 credential keys, first non-empty wins.
var (
	accessKeyKeys = []string{"accessKeyID", "AWS_ACCESS_KEY_ID"}
	secretKeyKeys = []string{"secretAccessKey", "AWS_SECRET_ACCESS_KEY"}
	sessionKeys   = []string{"sessionToken", "AWS_SESSION_TOKEN"}
)

// S3Keys reports whether a Secret holds S3 (or GCS HMAC) keys.
func S3Keys(data map[string][]byte) bool {
	return first(data, accessKeyKeys...) != "" && first(data, secretKeyKeys...) != ""
}

// OpenS3 opens an S3 bucket, or any S3-compatible one at e.BaseURL
// (path-style addressing), with the Secret's keys or, without them and
// only when ambient, the default AWS credential chain (the operator's own
// identity). region "" is us-east-1.
func OpenS3(ctx context.Context, e Endpoint, data map[string][]byte, ambient bool, region string, hc *http.Client) (*blob.Bucket, []string, error) {
	if region == "" {
		region = "us-east-1"
	}
	var cfg aws.Config
	var redact []string
	switch {
	case S3Keys(data):
		id, secret, token := first(data, accessKeyKeys...), first(data, secretKeyKeys...), first(data, sessionKeys...)
		cfg = aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider(id, secret, token)}
		redact = []string{secret, token}
	case first(data, accessKeyKeys...) != "" || first(data, secretKeyKeys...) != "":
		return nil, nil, fmt.Errorf("the Secret has only half of an S3 key pair: set both accessKeyID and secretAccessKey (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
	case !ambient:
		return nil, nil, sinks.AmbientRefused("S3 keys (accessKeyID and secretAccessKey)")
	default:
		// The default chain: environment, web identity (IRSA), instance role.
		var err error
		if cfg, err = awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region)); err != nil {
			return nil, nil, fmt.Errorf("AWS default credentials: %w", err)
		}
	}
	// Every request goes through the guarded client, whatever the chain.
	cfg.HTTPClient = hc
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if e.BaseURL != "" {
			o.BaseEndpoint = aws.String(e.BaseURL)
			o.UsePathStyle = true
		}
	})
	b, err := s3blob.OpenBucket(ctx, client, e.Bucket, nil)
	if err != nil {
		return nil, nil, err
	}
	return b, redact, nil
}
