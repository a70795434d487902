package sinktest

import (
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Server serves an in-process test server's handler on a loopback port of
// its own, so that Stop and Restart take it down and bring it back on the
// same port, its data kept by the handler: an outage as clients see it.
type Server struct {
	// Addr is host:port.
	Addr    string
	handler http.Handler

	mu  sync.Mutex
	srv *http.Server
}

// Serve starts serving handler on a free loopback port.
func Serve(handler http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: ln.Addr().String(), handler: handler}
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

// Stop takes the server down.
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
	for range 50 { // the port may linger for a moment
		var ln net.Listener
		if ln, err = net.Listen("tcp", s.Addr); err == nil {
			s.serve(ln)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.Join(errors.New("cannot listen again on "+s.Addr), err)
}

// CachedTool is a file that make test-deps installs under the user cache
// (~/.cache/kollect, or $KOLLECT_CACHE_DIR), such as
// azurite-current/node_modules/.bin/azurite-blob. A missing tool is an
// error that says how to install it: tests fail, they never skip.
func CachedTool(rel string) (string, error) {
	cache := os.Getenv("KOLLECT_CACHE_DIR")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "kollect")
	}
	p := filepath.Join(cache, rel)
	if _, err := os.Stat(p); err != nil {
		return "", errors.New(p + " is not installed: run make test-deps")
	}
	return p, nil
}
