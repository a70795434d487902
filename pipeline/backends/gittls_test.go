package backends

import (
	"context"
	"encoding/pem"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/sinks/git"
)

// A Git sink's tls.caBundle (or the CA its caSecretRef names, resolved
// into Credentials.CA) reaches the Git transport through the operator's
// guarded HTTP client: the remote behind an internal CA is trusted with
// it and refused without it.
func TestGitTrustsTheSinksCA(t *testing.T) {
	root := t.TempDir()
	bare := filepath.Join(root, "remote.git")
	if out, err := exec.Command("git", "init", "--bare", "-q", "-b", "main", bare).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(&cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}})
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	registry := Default(endpoint.Policy{AllowLoopback: true})
	git.GuardHTTP(GuardedDial(registry.Policy)) // as the manager installs it
	for _, tc := range []struct {
		name    string
		tls     *kollectv1alpha1.TLSSpec
		creds   Credentials
		trusted bool
	}{
		{"no CA", nil, Credentials{}, false},
		{"tls.caSecretRef, resolved", &kollectv1alpha1.TLSSpec{CASecretRef: &kollectv1alpha1.SecretReference{Name: "ca"}}, Credentials{CA: ca}, true},
		{"tls.caBundle", &kollectv1alpha1.TLSSpec{CABundle: ca}, Credentials{CA: ca}, true},
		{"tls.insecureSkipVerify", &kollectv1alpha1.TLSSpec{InsecureSkipVerify: true}, Credentials{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &kollectv1alpha1.KollectSnapshotSink{ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: "team"},
				Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "git", SinkCommonFields: kollectv1alpha1.SinkCommonFields{
					Endpoint: srv.URL + "/remote.git", TLS: tc.tls}}}
			b, err := registry.Build(context.Background(), sink, tc.creds, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			err = b.(interface{ Probe(context.Context) error }).Probe(context.Background())
			switch {
			case tc.trusted && err != nil:
				t.Errorf("probe: %v", err)
			case !tc.trusted && (err == nil || !strings.Contains(err.Error(), "certificate")):
				t.Errorf("probe of an untrusted remote: want a certificate error, got %v", err)
			}
		})
	}
}
