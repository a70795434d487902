package validate_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kollect.dev/kollect/pipeline/tools/validate"
)

// TestBrokenManifestsAreAllFound: every problem planted in testdata/broken
// is reported once, with its file, object and field.
func TestBrokenManifestsAreAllFound(t *testing.T) {
	res, err := validate.Paths(context.Background(), []string{"testdata/broken"})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ file, object, field, msg string }{
		{"profiles.yaml", "KollectProfile shop/bad-paths", "spec.attributes[0].path", "invalid JSONPath"},
		{"profiles.yaml", "KollectProfile shop/bad-paths", "spec.attributes[1].path", "invalid CEL"},
		{"profiles.yaml", "KollectProfile shop/bad-paths", "spec.attributes[2].path", "cel: prefix"},
		{"profiles.yaml", "KollectProfile shop/no-gvk", "spec.targetGVK", "Required value"},
		{"profiles.yaml", "KollectProfile shop/no-gvk", "spec.colour", "unknown field"},
		{"targets.yaml", "KollectTarget shop/bad-selector", "", `spec.labelSelector: "Sometimes" is not a valid label selector operator`},
		{"targets.yaml", "KollectTarget shop/cross-namespace", "spec.profileRef", "same namespace"},
		{"sinks.yaml", "KollectDatabaseSink shop/pg", "spec.postgres", "required when type is postgres"},
		{"sinks.yaml", "KollectEventSink shop/bus", "spec.kafka.brokers[0]", "should match"},
		{"sinks.yaml", "KollectInventory shop/inv", "spec.exportMinInterval", "between 0s and 24h"},
		{"sinks.yaml", "KollectInventory shop/inv", "", `"git" is listed twice`},
		{"sinks.yaml", "KollectWidget shop/w", "kind", "not a kind of kollect.dev/v1alpha1"},
		{"sinks.yaml", "KollectScope shop/Not_A_Name", "metadata.name", "RFC 1123"},
	}
	found := make([]bool, len(res.Problems))
	for _, w := range want {
		hit := -1
		for i, p := range res.Problems {
			if filepath.Base(p.File) == w.file && p.Object == w.object && p.Field == w.field && strings.Contains(p.Message, w.msg) && !p.Warning {
				hit = i
				break
			}
		}
		if hit < 0 {
			t.Errorf("not reported: %s: %s: %s: …%s…", w.file, w.object, w.field, w.msg)
			continue
		}
		found[hit] = true
		if line := res.Problems[hit].String(); strings.Contains(line, "\n") {
			t.Errorf("problem spans several lines: %q", line)
		}
	}
	for i, p := range res.Problems {
		if !found[i] {
			t.Errorf("unexpected problem: %s", p)
		}
	}
	if !res.Invalid() {
		t.Error("broken manifests reported as valid")
	}
}

func TestValidPipelinePasses(t *testing.T) {
	res, err := validate.Paths(context.Background(), []string{"testdata/valid/pipeline.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Invalid() {
		t.Fatalf("valid manifests rejected: %v", res.Problems)
	}
	// The Secret is skipped; the Git sink gets the webhook's warnings.
	var got []string
	for _, p := range res.Problems {
		got = append(got, p.Object+": "+p.Message)
	}
	want := []string{"Secret default/dsn: not a kollect.dev object; skipped",
		"KollectSnapshotSink default/git: git sinks write YAML unless spec.serialization.format says otherwise",
		"KollectSnapshotSink default/git: spec.layout.mode perResource: files of objects that are gone are pruned"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if res.Objects["KollectProfile"] != 1 || res.Objects["KollectInventory"] != 1 || res.Objects["KollectDatabaseSink"] != 1 {
		t.Fatalf("objects counted: %v", res.Objects)
	}
}

func TestAReferenceOutsideTheFilesIsAWarning(t *testing.T) {
	f := filepath.Join(t.TempDir(), "target.yaml")
	if err := os.WriteFile(f, []byte(`apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: t, namespace: shop}
spec: {profileRef: in-the-cluster}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := validate.Paths(context.Background(), []string{f})
	if err != nil {
		t.Fatal(err)
	}
	if res.Invalid() || len(res.Problems) != 1 || !res.Problems[0].Warning || res.Problems[0].Field != "spec.profileRef" {
		t.Fatalf("want one warning on spec.profileRef, got %v", res.Problems)
	}
}

// The webhooks' policy rules run offline too, against the scopes of the
// files: an interval under the floor, a kind or namespace the scope does
// not allow, an endpoint on the metadata service, a cluster kind's
// namespaces outside the cluster scope.
func TestPolicyRulesOfTheWebhooksRunOffline(t *testing.T) {
	f := filepath.Join(t.TempDir(), "team.yaml")
	if err := os.WriteFile(f, []byte(`apiVersion: kollect.dev/v1alpha1
kind: KollectScope
metadata: {name: team-a-scope, namespace: team-a}
spec:
  allowedGVKs: [{group: "", version: v1, kind: ConfigMap}]
  allowedNamespaces: [team-a]
  minExportInterval: 1m
---
apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: deployments, namespace: team-a}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes: [{name: replicas, path: '$.spec.replicas'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: deployments, namespace: team-a}
spec: {profileRef: deployments, includedNamespaces: [team-b]}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: fast, namespace: team-a}
spec: {exportMinInterval: 10s, snapshotSinkRefs: [git]}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: git, namespace: team-a}
spec: {type: git, endpoint: "http://169.254.169.254/repo.git", serialization: {format: json}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := validate.Paths(context.Background(), []string{f})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ object, field, msg string }{
		{"KollectTarget team-a/deployments", "", `apps/v1/Deployment is not in KollectScope "team-a-scope" allowedGVKs`},
		{"KollectTarget team-a/deployments", "", `workload namespace "team-b" is not in KollectScope "team-a-scope" allowedNamespaces`},
		{"KollectInventory team-a/fast", "spec.exportMinInterval", "below the minimum export interval 1m0s"},
		{"KollectSnapshotSink team-a/git", "spec.endpoint", "169.254.169.254"},
	}
	for _, w := range want {
		found := false
		for _, p := range res.Problems {
			found = found || (p.Object == w.object && p.Field == w.field && strings.Contains(p.Message, w.msg) && !p.Warning)
		}
		if !found {
			t.Errorf("not reported: %s: %s: %s\ngot %v", w.object, w.field, w.msg, res.Problems)
		}
	}
}
