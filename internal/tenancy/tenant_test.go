//go:build integration

package tenancy_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"kollect.dev/kollect/internal/testenv"
)

// configMaps is a ConfigMap in each namespace, created by the platform.
func configMaps(t *testing.T, nss ...string) {
	t.Helper()
	for _, ns := range nss {
		apply(t, env.Client, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%[1]s, namespace: %[1]s, labels: {app: tenancy}}\ndata: {colour: blue}\n", ns))
	}
}

// pipeline is a tenant's ConfigMap pipeline into a Git repository; target
// holds the target's namespace fields.
func pipeline(ns, remote, target string) string {
	return fmt.Sprintf(`apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: configmaps, namespace: %[1]s}
spec:
  targetGVK: {group: "", version: v1, kind: ConfigMap}
  attributes: [{name: colour, path: '$.data.colour', optional: true}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: configmaps, namespace: %[1]s}
spec:
  profileRef: configmaps
  labelSelector: {matchLabels: {app: tenancy}}
%[3]s
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: git, namespace: %[1]s}
spec:
  type: git
  endpoint: file://%[2]s
  serialization: {format: yaml}
  layout: {mode: perResource, content: attributes, pathTemplate: '{sourceNamespace}/{sourceName}{extension}'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: inventory, namespace: %[1]s}
spec:
  snapshotSinkRefs: [git]
`, ns, remote, target)
}

// TestATenantGetsNothingOutOfItsNamespace is issue 35's attacker: a team
// with the usual Role on kollect.dev in its namespace, against the manager
// process with its default flags (closed namespaces, no ambient
// credentials, secure metrics) and the webhooks off, so the runtime must
// hold on its own. Each attempt either gets a condition saying why, or
// reads only what is the team's; none sends a request or a credential.
func TestATenantGetsNothingOutOfItsNamespace(t *testing.T) {
	namespaces(t, "team-a", "team-b", "kube-system", "kollect-system", "shared-ambient")
	configMaps(t, "team-a", "team-b", "kube-system")
	// The platform's own things: a scope capping team-a, a Secret tenants
	// must never read, and a namespace allowed the operator's identity.
	apply(t, env.Client, `apiVersion: kollect.dev/v1alpha1
kind: KollectScope
metadata: {name: platform, namespace: team-a}
spec:
  allowedNamespaces: [team-a]
  allowedGVKs: [{group: "", version: v1, kind: ConfigMap}]
---
apiVersion: v1
kind: Secret
metadata: {name: platform-token, namespace: kollect-system}
stringData: {token: platform-only-token}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectScope
metadata: {name: platform, namespace: shared-ambient}
spec:
  allowAmbientCredentials: true
`)
	// The pod's own cloud identity, as IRSA or a node role would give it.
	op := startOperator(t, []string{"AWS_ACCESS_KEY_ID=AKIAOPERATOR", "AWS_SECRET_ACCESS_KEY=operator-identity"},
		"--allow-ambient-credentials", "--metrics-secure=true")
	a := tenant(t, "team-a-dev", "team-a")
	b := tenant(t, "team-b-dev", "team-b")

	t.Run("a namespace without a scope reads only itself", func(t *testing.T) {
		remote, files := repo(t)
		apply(t, b, pipeline("team-b", remote, ""))
		testenv.Eventually(t, 45*time.Second, "team-b's own ConfigMap, and only it, in Git", func() error {
			got, err := files()
			if err != nil {
				return err
			}
			if !slices.Equal(got, []string{"team-b/cm-team-b.yaml"}) {
				return fmt.Errorf("files %v", got)
			}
			return nil
		})
		condition(t, "KollectTarget", "team-b", "configmaps", "Ready", "True", "Collecting", "")
		apply(t, b, `apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: kube-system, namespace: team-b}
spec:
  profileRef: configmaps
  includedNamespaces: [kube-system]
`)
		condition(t, "KollectTarget", "team-b", "kube-system", "Degraded", "True", "ScopeNamespaceDenied",
			`workload namespace "kube-system" is outside the operator's default namespace ceiling`)
		time.Sleep(2 * time.Second) // an export the refused target could cause
		if got, _ := files(); slices.ContainsFunc(got, func(f string) bool { return !strings.HasPrefix(f, "team-b/") }) {
			t.Fatalf("another namespace's rows in team-b's repository: %v", got)
		}
	})

	t.Run("a tenant's own scope lifts nothing", func(t *testing.T) {
		apply(t, a, `apiVersion: kollect.dev/v1alpha1
kind: KollectScope
metadata: {name: "0", namespace: team-a}
spec:
  allowedNamespaces: [team-a, team-b, kube-system]
  allowedSecretNamespaces: [kollect-system]
  allowAmbientCredentials: true
---
apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: configmaps, namespace: team-a}
spec:
  targetGVK: {group: "", version: v1, kind: ConfigMap}
  attributes: [{name: colour, path: '$.data.colour', optional: true}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: team-b, namespace: team-a}
spec:
  profileRef: configmaps
  includedNamespaces: [team-b]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: borrowed, namespace: team-a}
spec:
  type: git
  endpoint: file:///nonexistent/remote.git
  secretRef: {name: platform-token, namespace: kollect-system}
`)
		condition(t, "KollectTarget", "team-a", "team-b", "Degraded", "True", "ScopeNamespaceDenied",
			`workload namespace "team-b" is not in KollectScope "platform" allowedNamespaces`)
		msg := condition(t, "KollectSnapshotSink", "team-a", "borrowed", "ConnectionVerified", "False", "SecretResolveFailed", "allowedSecretNamespaces")
		if strings.Contains(msg, "platform-only-token") {
			t.Fatalf("the platform's Secret leaks into status: %s", msg)
		}
	})

	t.Run("Google keys that read the operator's files are refused unsent", func(t *testing.T) {
		tokens, hits := counter(t, http.StatusOK)
		// What the key would read: a stand-in for the operator's own
		// service-account token.
		stolen := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(stolen, []byte("operator-sa-token"), 0o600); err != nil {
			t.Fatal(err)
		}
		key, _ := json.Marshal(map[string]any{"type": "external_account", "audience": "//iam.googleapis.com/x",
			"subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": tokens.URL + "/token",
			"credential_source": map[string]string{"file": stolen}})
		keyJSON, _ := json.Marshal(string(key))
		apply(t, a, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: gcp-key, namespace: team-a}
stringData: {credentials.json: %s}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: gcs, namespace: team-a}
spec:
  type: gcs
  endpoint: gs://team-a-bucket
  secretRef: {name: gcp-key}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: bigquery, namespace: team-a}
spec:
  type: bigquery
  bigquery: {project: p, dataset: d, table: t, secretRef: {name: gcp-key}}
`, keyJSON))
		for _, s := range []struct{ kind, name string }{{"KollectSnapshotSink", "gcs"}, {"KollectDatabaseSink", "bigquery"}} {
			msg := condition(t, s.kind, "team-a", s.name, "ConnectionVerified", "False", "ConnectionTestFailed", `type "external_account"`)
			if strings.Contains(msg, "operator-sa-token") || strings.Contains(msg, tokens.URL) {
				t.Fatalf("%s: status repeats the key: %s", s.name, msg)
			}
		}
		if n := hits.Load(); n != 0 {
			t.Fatalf("the key's token endpoint received %d requests", n)
		}
	})

	t.Run("a sink without keys does not get the operator's identity", func(t *testing.T) {
		s3, hits := counter(t, http.StatusOK)
		sink := func(ns string) string {
			return fmt.Sprintf(`apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: ambient, namespace: %s}
spec:
  type: s3
  endpoint: %s/other-teams-bucket
`, ns, s3.URL)
		}
		apply(t, a, sink("team-a"))
		condition(t, "KollectSnapshotSink", "team-a", "ambient", "ConnectionVerified", "False", "AmbientCredentialsRefused", "allowAmbientCredentials")
		if n := hits.Load(); n != 0 {
			t.Fatalf("the bucket received %d requests signed with the operator's identity", n)
		}
		// Where the platform allows it, the same sink does use it: the
		// refusal above is the scope's, not a broken sink.
		apply(t, env.Client, sink("shared-ambient"))
		condition(t, "KollectSnapshotSink", "shared-ambient", "ambient", "ConnectionVerified", "True", "ConnectionOK", "")
		if hits.Load() == 0 {
			t.Fatal("the allowed sink sent nothing")
		}
	})

	t.Run("metrics answer no anonymous scrape", func(t *testing.T) {
		insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test of the server's auth, not its certificate
		resp, err := insecure.Get("https://" + op.MetricsAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
			t.Fatalf("anonymous HTTPS scrape: %s", resp.Status)
		}
		if strings.Contains(string(body), "kollect_") {
			t.Fatal("an anonymous scrape got series")
		}
		if resp, err := http.Get("http://" + op.MetricsAddr + "/metrics"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), "kollect_") {
				t.Fatal("plain HTTP serves series")
			}
		}
	})
}
