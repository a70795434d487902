package sinktest

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
)

// FaultProxy stands in front of a test server and fails the requests a rule
// picks with 503 Service Unavailable, as a load balancer or an overloaded
// service would, passing every other request through unchanged. It records
// what it failed, so a test can tell that the fault it meant happened.
type FaultProxy struct {
	// URL is the proxy's endpoint (http://127.0.0.1:port).
	URL string
	*Server

	mu     sync.Mutex
	rule   func(*http.Request) bool
	failed []string
}

// NewFaultProxy proxies to target (http://host:port); Stop ends it.
func NewFaultProxy(target string) (*FaultProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &FaultProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv, err := Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.fails(r) {
			http.Error(w, "injected fault", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	if err != nil {
		return nil, err
	}
	p.Server, p.URL = srv, "http://"+srv.Addr
	return p, nil
}

// FailWhen sets the rule (nil: fail nothing) and forgets what failed.
func (p *FaultProxy) FailWhen(rule func(*http.Request) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rule, p.failed = rule, nil
}

// Failed lists the requests failed since the rule was set, as
// "METHOD path".
func (p *FaultProxy) Failed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.failed...)
}

func (p *FaultProxy) fails(r *http.Request) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rule == nil || !p.rule(r) {
		return false
	}
	p.failed = append(p.failed, r.Method+" "+r.URL.Path)
	return true
}
