package gcpauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/gcpauth"
)

// tokenServer counts the requests it receives and answers each with a token.
func tokenServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"t","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func serviceAccountKey(t *testing.T, tokenURI string) []byte {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "client_email": "sink@p.iam.gserviceaccount.com", "private_key_id": "1",
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "token_uri": tokenURI,
	})
	return b
}

// TestOnlyServiceAccountKeys proves that a key of any other type makes no
// request and reads no file it names, while a service-account key does
// reach its token endpoint (so the server would have seen the others).
func TestOnlyServiceAccountKeys(t *testing.T) {
	srv, hits := tokenServer(t)
	secretFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secretFile, []byte("operator-service-account-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	external, _ := json.Marshal(map[string]any{
		"type": "external_account", "audience": "//iam.googleapis.com/x", "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
		"token_url": srv.URL + "/token", "credential_source": map[string]string{"file": secretFile},
	})
	impersonated, _ := json.Marshal(map[string]any{
		"type": "impersonated_service_account", "service_account_impersonation_url": srv.URL + "/imp",
		"source_credentials": map[string]any{"type": "external_account", "token_url": srv.URL + "/token", "credential_source": map[string]string{"file": secretFile}},
	})
	user, _ := json.Marshal(map[string]string{"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r"})
	for _, tc := range []struct {
		name    string
		src     gcpauth.Source
		wantErr string
		wantHit bool
	}{
		{name: "external_account reading the operator's token", src: gcpauth.Source{Key: external, Ambient: true}, wantErr: `type "external_account"`},
		{name: "impersonated service account", src: gcpauth.Source{Key: impersonated}, wantErr: `type "impersonated_service_account"`},
		{name: "authorized user", src: gcpauth.Source{Key: user}, wantErr: `type "authorized_user"`},
		{name: "no type", src: gcpauth.Source{Key: []byte(`{"client_email":"x"}`)}, wantErr: `type ""`},
		{name: "not JSON", src: gcpauth.Source{Key: []byte(`-----BEGIN`)}, wantErr: "not JSON"},
		{name: "no key and no ambient credentials", src: gcpauth.Source{}, wantErr: "may not use the operator's own cloud identity"},
		{name: "service-account key", src: gcpauth.Source{Key: serviceAccountKey(t, srv.URL+"/token")}, wantHit: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := hits.Load()
			ts, err := gcpauth.TokenSource(context.Background(), srv.Client(), tc.src, "https://www.googleapis.com/auth/devstorage.read_write")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "operator-service-account-token") {
					t.Fatalf("the error quotes the file the key names: %v", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ts.Token(); err != nil {
					t.Fatal(err)
				}
			}
			if got := hits.Load() - before; (got > 0) != tc.wantHit {
				t.Fatalf("token server got %d requests, want any: %v", got, tc.wantHit)
			}
		})
	}
	if _, err := gcpauth.TokenSource(context.Background(), srv.Client(), gcpauth.Source{}); !errors.Is(err, sinks.ErrAmbientRefused) || !errors.Is(err, sinks.ErrPermanent) {
		t.Fatalf("no key without ambient: %v, want ErrAmbientRefused", err)
	}
}
