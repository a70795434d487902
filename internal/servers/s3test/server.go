// Package s3test runs an S3 server inside the test process, on loopback:
// gofakes3 with its in-memory backend. Stop and Restart take it down and
// bring it back on the same port with its data, for outage tests.
package s3test

import (
	"context"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"kollect.dev/kollect/internal/sinktest"
)

// Keys are the credentials the server accepts (it checks none).
const (
	AccessKey = "kollect-test-access"
	SecretKey = "kollect-test-secret-0123456789"
)

// TB is the part of testing.TB Start needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Server is one S3 server.
type Server struct {
	// URL is the endpoint (http://127.0.0.1:port).
	URL     string
	backend *s3mem.Backend
	*sinktest.Server
}

// Start runs a server for the test and stops it at the end.
func Start(tb TB) *Server {
	tb.Helper()
	s, err := New()
	if err != nil {
		tb.Fatalf("s3test: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// New runs a server (make demo's too); Stop ends it.
func New() (*Server, error) {
	be := s3mem.New()
	srv, err := sinktest.Serve(gofakes3.New(be, gofakes3.WithTimeSkewLimit(0)).Server())
	if err != nil {
		return nil, err
	}
	return &Server{URL: "http://" + srv.Addr, backend: be, Server: srv}, nil
}

// CreateBucket makes a bucket.
func (s *Server) CreateBucket(name string) error { return s.backend.CreateBucket(name) }

// Client is an AWS SDK client of the server, for reading back what a sink
// wrote as any S3 user would.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, "")})
}

// Objects lists the keys under prefix with their bodies, through the SDK.
func (s *Server) Objects(ctx context.Context, bucket, prefix string) (map[string][]byte, error) {
	c := s.Client()
	out := map[string][]byte{}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			if err != nil {
				return nil, err
			}
			b, err := io.ReadAll(got.Body)
			got.Body.Close()
			if err != nil {
				return nil, err
			}
			out[*o.Key] = b
		}
	}
	return out, nil
}
