//go:build integration

package controllers_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestSnapshotSinkProbes(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "probe.git")
	bareRepo(t, bare)
	apply(t, namespaceYAML("probe", "")+fmt.Sprintf(`---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: reachable, namespace: probe}
spec: {type: git, endpoint: 'file://%[1]s'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: no-secret, namespace: probe}
spec: {type: git, endpoint: 'file://%[1]s', secretRef: {name: missing}}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: no-probe, namespace: probe}
spec: {type: git, endpoint: 'file://%[1]s', connectionTest: false}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: metadata-service, namespace: probe}
spec: {type: git, endpoint: 'http://169.254.169.254/repo.git'}
`, bare))
	cases := []struct{ name, status, reason, message string }{
		{"reachable", "True", "ConnectionOK", "TLS and git remote reachability verified"},
		{"no-secret", "False", "SecretResolveFailed", "credentials Secret probe/missing not found"},
		{"metadata-service", "False", "ConnectionTestFailed", "link-local"},
	}
	for _, tc := range cases {
		eventually(t, 20*time.Second, tc.name, func() error {
			u := get(t, "KollectSnapshotSink", "probe", tc.name)
			s, r, m := condition(u, "ConnectionVerified")
			if s != tc.status || r != tc.reason || !contains(m, tc.message) {
				return fmt.Errorf("ConnectionVerified=%s/%s: %s", s, r, m)
			}
			if d, _, _ := condition(u, "Degraded"); (tc.status == "False") != (d == "True") {
				return fmt.Errorf("Degraded=%q with ConnectionVerified=%s", d, s)
			}
			return nil
		})
	}
	time.Sleep(500 * time.Millisecond)
	if s, _, _ := condition(get(t, "KollectSnapshotSink", "probe", "no-probe"), "ConnectionVerified"); s != "" {
		t.Errorf("connectionTest: false must not probe, got ConnectionVerified=%s", s)
	}
	u := get(t, "KollectSnapshotSink", "probe", "no-probe")
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"kollect.dev/test-connection":"true"}}}`))
	if err := env.Client.Patch(t.Context(), u, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "a requested one-off probe runs and its annotation is removed", func() error {
		u := get(t, "KollectSnapshotSink", "probe", "no-probe")
		if s, _, _ := condition(u, "ConnectionVerified"); s != "True" {
			return fmt.Errorf("ConnectionVerified=%q", s)
		}
		if _, ok := u.GetAnnotations()["kollect.dev/test-connection"]; ok {
			return fmt.Errorf("annotation still present")
		}
		return nil
	})
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
