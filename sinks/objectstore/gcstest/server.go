// Package gcstest runs a Google Cloud Storage server inside the test
// process, on loopback: fake-gcs-server's fakestorage (JSON and upload
// APIs, in memory), served on a listener of our own so that Stop and
// Restart take it down and bring it back on the same port with its data.
package gcstest

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// TB is the part of testing.TB Start needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Server is one GCS server.
type Server struct {
	// URL is the endpoint (http://127.0.0.1:port); a sink reaches a bucket
	// at URL/bucket.
	URL  string
	addr string
	fake *fakestorage.Server

	mu  sync.Mutex
	srv *http.Server
}

// Start runs a server for the test and stops it at the end.
func Start(tb TB) *Server {
	tb.Helper()
	s, err := New()
	if err != nil {
		tb.Fatalf("gcstest: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// New runs a server; Close stops it.
func New() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	// The public host is how clients reach it: upload and media links
	// point there.
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, Scheme: "http", PublicHost: addr})
	if err != nil {
		ln.Close()
		return nil, err
	}
	s := &Server{URL: "http://" + addr, addr: addr, fake: fake}
	s.serve(ln)
	return s, nil
}

func (s *Server) serve(ln net.Listener) {
	srv := &http.Server{Handler: s.fake.HTTPHandler(), ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// CreateBucket makes a bucket.
func (s *Server) CreateBucket(name string) {
	s.fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
}

// Object reads an object's content and content encoding directly.
func (s *Server) Object(bucket, name string) ([]byte, string, error) {
	o, err := s.fake.GetObject(bucket, name)
	if err != nil {
		return nil, "", err
	}
	return o.Content, o.ContentEncoding, nil
}

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
	var err error
	for range 50 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", s.addr); err == nil {
			s.serve(ln)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.Join(errors.New("gcstest: cannot listen again on "+s.addr), err)
}

// Close stops the server for good.
func (s *Server) Close() {
	s.Stop()
	s.fake.Stop()
}
