// Package s3test runs an S3 server inside the test process, on loopback:
// gofakes3 with its in-memory backend. Stop and Restart take it down and
// bring it back on the same port with its data, for outage tests.
package s3test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
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
	addr    string
	backend *s3mem.Backend
	handler http.Handler

	mu  sync.Mutex
	srv *http.Server
}

// Start runs a server for the test and stops it at the end.
func Start(tb TB) *Server {
	tb.Helper()
	s, err := New()
	if err != nil {
		tb.Fatalf("s3test: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// New runs a server; Close stops it.
func New() (*Server, error) {
	be := s3mem.New()
	s := &Server{backend: be, handler: gofakes3.New(be, gofakes3.WithTimeSkewLimit(0)).Server()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.addr = ln.Addr().String()
	s.URL = "http://" + s.addr
	s.serve(ln)
	return s, nil
}

func (s *Server) serve(ln net.Listener) {
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// CreateBucket makes a bucket.
func (s *Server) CreateBucket(name string) error { return s.backend.CreateBucket(name) }

// Stop takes the server down; its data stays.
func (s *Server) Stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Restart brings a stopped server back on the same port.
func (s *Server) Restart() error {
	var ln net.Listener
	var err error
	for range 50 { // the port may linger for a moment
		if ln, err = net.Listen("tcp", s.addr); err == nil {
			s.serve(ln)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.Join(errors.New("s3test: cannot listen again on "+s.addr), err)
}

// Close stops the server for good.
func (s *Server) Close() { s.Stop() }

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
