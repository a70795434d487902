package git_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
)

// httpRemote serves the bare repositories under root with git's own smart
// HTTP backend, behind basic auth that accepts one token.
func httpRemote(t *testing.T, root, token string) *httptest.Server {
	t.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=kollect"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pass, ok := r.BasicAuth(); !ok || pass != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPRemoteWithTokenAuth(t *testing.T) {
	bare := remote(t)
	gitCmd(t, bare, "config", "http.receivepack", "true")
	srv := httpRemote(t, filepath.Dir(bare), "s3cret")
	url := srv.URL + "/" + filepath.Base(bare)

	good, err := openSink(t, git.Config{URL: url, AllowPlainHTTPCredentials: true, Token: "s3cret", MirrorDir: t.TempDir(), Layout: git.Layout{Format: "json"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := good.Export(context.Background(), snap(row(t, "a", "x:1"))); err != nil {
		t.Fatalf("export over HTTP with a valid token: %v", err)
	}
	if got := gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main"); got != "README.md\ninventory/default/demo-inventory.json" {
		t.Fatalf("files after an HTTP push:\n%s", got)
	}
	if err := git.Probe(context.Background(), git.Config{URL: url, AllowPlainHTTPCredentials: true, Token: "s3cret"}); err != nil {
		t.Errorf("probe with a valid token: %v", err)
	}

	bad, err := openSink(t, git.Config{URL: url, AllowPlainHTTPCredentials: true, Token: "wrong", MirrorDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Export(context.Background(), snap(row(t, "a", "x:2")))
	if !errors.Is(err, sinks.ErrPermanent) {
		t.Fatalf("a rejected token must be a permanent error, got %v", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("the error leaks the token: %v", err)
	}
}

// A self-hosted remote behind an internal CA: untrusted without
// tls.caBundle, trusted with it, and reached without verification only
// with tls.insecureSkipVerify; probe, fetch and push alike.
func TestHTTPSRemoteBehindAnInternalCA(t *testing.T) {
	bare := remote(t)
	gitCmd(t, bare, "config", "http.receivepack", "true")
	plain := httpRemote(t, filepath.Dir(bare), "s3cret")
	srv := httptest.NewTLSServer(plain.Config.Handler)
	t.Cleanup(srv.Close)
	url := srv.URL + "/" + filepath.Base(bare)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for _, tc := range []struct {
		name     string
		ca       []byte
		insecure bool
		trusted  bool
	}{
		{"no CA", nil, false, false},
		{"another CA", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: otherCert(t)}), false, false},
		{"tls.caBundle", ca, false, true},
		{"tls.insecureSkipVerify", nil, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := git.Config{URL: url, Token: "s3cret", CABundle: tc.ca, InsecureSkipTLS: tc.insecure, MirrorDir: t.TempDir(), Layout: git.Layout{Format: "json"}}
			probeErr := git.Probe(context.Background(), cfg)
			s, err := openSink(t, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, exportErr := s.Export(context.Background(), snap(row(t, "a", "x:"+tc.name)))
			for what, err := range map[string]error{"probe": probeErr, "export": exportErr} {
				switch {
				case tc.trusted && err != nil:
					t.Errorf("%s: %v", what, err)
				case !tc.trusted && (err == nil || !strings.Contains(err.Error(), "certificate")):
					t.Errorf("%s of an untrusted remote: want a certificate error, got %v", what, err)
				}
			}
			if tc.trusted {
				if got := gitCmd(t, bare, "show", "main:inventory/default/demo-inventory.json"); !strings.Contains(got, "x:"+tc.name) {
					t.Errorf("the remote holds:\n%s", got)
				}
			}
		})
	}
}

// otherCert is a self-signed CA that did not sign the remote's
// certificate (every httptest server shares one).
func otherCert(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
