package bqtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"
	"time"
)

// Scope is the OAuth scope a token must have been asked for.
const Scope = "https://www.googleapis.com/auth/bigquery"

type account struct{ key *rsa.PublicKey }

// ServiceAccount issues a service-account key for email, as the JSON a
// Secret's credentials.json holds, with the fake's token endpoint as its
// token_uri. From then on every API request needs a token obtained with a
// key the fake issued.
func (s *Server) ServiceAccount(project, email string) []byte {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	s.accounts[email] = &account{key: &key.PublicKey}
	s.auth = true
	s.mu.Unlock()
	out, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": project, "private_key_id": "kollect-test",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": email, "client_id": "1", "token_uri": s.URL + "/token",
	})
	return out
}

// token is the OAuth 2.0 JWT-bearer grant: the assertion must be signed by
// a key the fake issued, for its token endpoint, asking for the BigQuery
// scope, and not expired.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		tokenError(w, "unsupported_grant_type")
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		tokenError(w, "invalid_grant")
		return
	}
	var header struct{ Alg string }
	var claims struct {
		Iss, Scope, Aud string
		Exp             int64
	}
	if decode(parts[0], &header) != nil || decode(parts[1], &claims) != nil || header.Alg != "RS256" {
		tokenError(w, "invalid_grant")
		return
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		tokenError(w, "invalid_grant")
		return
	}
	s.mu.Lock()
	acct := s.accounts[claims.Iss]
	s.mu.Unlock()
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if acct == nil || rsa.VerifyPKCS1v15(acct.key, crypto.SHA256, sum[:], sig) != nil {
		tokenError(w, "invalid_grant")
		return
	}
	if claims.Aud != s.URL+"/token" || !strings.Contains(" "+claims.Scope+" ", " "+Scope+" ") || time.Unix(claims.Exp, 0).Before(time.Now()) {
		tokenError(w, "invalid_scope")
		return
	}
	tok := newID()
	s.mu.Lock()
	s.tokens[tok] = time.Now().Add(time.Hour)
	s.mu.Unlock()
	reply(w, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
}

func decode(part string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func tokenError(w http.ResponseWriter, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
}

// authorized lets a request through when it carries a token the fake
// issued (once a service account exists).
func (s *Server) authorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		need := s.auth
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		exp, known := s.tokens[tok]
		s.mu.Unlock()
		if need && (!ok || !known || exp.Before(time.Now())) {
			fail(w, http.StatusUnauthorized, "authError", "Request is missing required authentication credential")
			return
		}
		next.ServeHTTP(w, r)
	})
}
