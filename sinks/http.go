package sinks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"time"
)

// HTTPClient is the client backends that speak HTTP talk through: it
// dials with dial (the endpoint guard), verifies servers with the sink's
// CA bundle (or not at all when insecure), and times out.
func HTTPClient(dial func(ctx context.Context, network, addr string) (net.Conn, error), ca []byte, insecure bool) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // the guard checks what is dialled; a proxy would hide it
	if dial != nil {
		tr.DialContext = dial
	}
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // the sink's own, reported as TLSInsecure
	if len(ca) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("the CA bundle holds no PEM certificate")
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	return &http.Client{Transport: tr, Timeout: 5 * time.Minute}, nil
}
