//go:build integration

package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"
)

// manifest builds a Kollect object of kind with the given spec YAML (indented
// by two spaces under spec:).
func manifest(kind, name, spec string) string {
	return fmt.Sprintf("apiVersion: kollect.dev/v1alpha1\nkind: %s\nmetadata:\n  name: %s\nspec:\n%s", kind, name, indent(spec))
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestValidCRsAreAccepted(t *testing.T) {
	createNamespace(t, "crd-test")
	cases := []struct{ name, kind, spec string }{
		{"profile with JSONPath, CEL and helm paths", "KollectProfile", `
targetGVK: {group: apps, version: v1, kind: Deployment}
attributes:
- {name: image, path: '$.spec.template.spec.containers[0].image'}
- {name: count, path: 'cel:size(object.spec.template.spec.containers)'}
- {name: chart, path: 'helm:release.chartName', optional: true}
`},
		{"inventory with sink refs written as strings and objects", "KollectInventory", `
exportMinInterval: 1m30s
databaseSinkRefs: [warehouse]
snapshotSinkRefs:
- {name: git, exportMinInterval: 1h, maxExportBytes: 524288}
`},
		{"git sink without a git block", "KollectSnapshotSink", `
type: git
endpoint: https://git.example.com/inventory.git
`},
		{"git sink with type inferred from the git block and nested aliases", "KollectSnapshotSink", `
git: {endpoint: 'https://git.example.com/a.git', branch: main, pathTemplate: inventory/snapshot.json}
`},
		{"scope with the deprecated sinkRefs alias", "KollectScope", `
allowedNamespaces: [team-a]
sinkRefs: [team-git]
minExportInterval: 1m
`},
		{"s3 sink in per-row layout (content defaults to item)", "KollectSnapshotSink", `
type: s3
endpoint: s3://inventory/fleet
layout: {mode: perResource}
`},
		{"postgres sink", "KollectDatabaseSink", `
type: postgres
postgres: {databaseRef: {name: dsn}, table: inventory_items}
`},
		{"kafka sink", "KollectEventSink", `
type: kafka
kafka: {brokers: ['kafka.example:9092'], topic: inventory.changes}
`},
		{"nats sink with the url from endpoint", "KollectEventSink", `
type: nats
endpoint: nats://nats.example:4222
nats: {subject: inventory.events}
`},
		{"connection test", "KollectConnectionTest", `
sinkRef: {databaseSinkRef: warehouse}
`},
		{"cluster target", "KollectClusterTarget", `
profileRef: {name: p, namespace: kollect-system}
namespaceSelector: {matchLabels: {tenant: platform}}
`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := create(t, manifest(tc.kind, fmt.Sprintf("valid-%d", i), tc.spec)); err != nil {
				t.Fatalf("want accepted, got: %v", err)
			}
		})
	}
}

func TestInvalidCRsAreRejectedWithAClearMessage(t *testing.T) {
	createNamespace(t, "crd-test")
	cases := []struct {
		name, kind, spec string
		// want are substrings of the API server's error: the field and what
		// to fix.
		want []string
	}{
		{"profile without targetGVK", "KollectProfile", `
attributes: [{name: a, path: '$.x'}]
`, []string{"spec.targetGVK", "Required value"}},
		{"profile path using CEL without the prefix", "KollectProfile", `
targetGVK: {version: v1, kind: Pod}
attributes: [{name: a, path: object.metadata.name}]
`, []string{"spec.attributes[0].path", "cel: prefix"}},
		{"profile attribute named like the embedded resource", "KollectProfile", `
targetGVK: {version: v1, kind: Pod}
export: {mode: Resource}
attributes: [{name: resource, path: '$.x'}]
`, []string{"spec.attributes", "export.as"}},
		{"target with a bad watchMode", "KollectTarget", `
profileRef: p
watchMode: Sometimes
`, []string{"spec.watchMode", "Unsupported value", "All", "OptIn"}},
		{"target profileRef with a namespace", "KollectTarget", `
profileRef: other/p
`, []string{"spec.profileRef", "same namespace"}},
		{"inventory with a bad duration", "KollectInventory", `
exportMinInterval: 30 seconds
`, []string{"spec.exportMinInterval", "should match"}},
		{"inventory with an interval over 24h", "KollectInventory", `
exportMinInterval: 25h
`, []string{"spec.exportMinInterval", "between 0s and 24h"}},
		{"inventory sink ref without a name", "KollectInventory", `
databaseSinkRefs: [{exportMinInterval: 1m}]
`, []string{"spec.databaseSinkRefs[0].name", "Required value"}},
		{"inventory sink ref object pointing into another namespace", "KollectInventory", `
databaseSinkRefs: [{name: other/warehouse}]
`, []string{"spec.databaseSinkRefs[0].name", "should match"}},
		{"inventory sink ref with a bad interval", "KollectInventory", `
snapshotSinkRefs: [{name: git, exportMinInterval: soon}]
`, []string{"spec.snapshotSinkRefs[0].exportMinInterval", "should match"}},
		{"inventory with more than 20 bindings in one family", "KollectInventory", `
snapshotSinkRefs: [s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15, s16, s17, s18, s19, s20, s21]
`, []string{"spec.snapshotSinkRefs", "Too many"}},
		{"postgres sink without its block", "KollectDatabaseSink", `
type: postgres
`, []string{"spec.postgres", "required when type is postgres"}},
		{"database sink with a block of another type", "KollectDatabaseSink", `
type: postgres
postgres: {databaseRef: {name: dsn}, table: t}
mongodb: {databaseRef: {name: uri}, database: d, collection: c}
`, []string{"spec.mongodb", "only valid with type mongodb"}},
		{"snapshot sink of unknown type", "KollectSnapshotSink", `
type: ftp
`, []string{"spec.type", "Unsupported value"}},
		{"snapshot sink without type or git block", "KollectSnapshotSink", `
endpoint: s3://bucket
`, []string{"spec.type", "required"}},
		{"s3 sink with a git block", "KollectSnapshotSink", `
type: s3
git: {branch: main}
`, []string{"spec.git", "only valid with type git"}},
		{"s3 sink with a git-only layout field", "KollectSnapshotSink", `
type: s3
layout: {mode: perResource, content: manifest}
`, []string{"spec.layout", "index and filename are for git and gitlab"}},
		{"git sink with yaml on an object store format", "KollectSnapshotSink", `
type: s3
serialization: {format: yaml}
`, []string{"spec.serialization.format", "object stores (s3, gcs, azureblob) write json, ndjson, csv or parquet"}},
		{"git sink with an unsafe branch", "KollectSnapshotSink", `
type: git
git: {branch: 'refs/heads/main'}
`, []string{"spec.git.branch", "plain branch name"}},
		{"sink pathTemplate escaping the tree", "KollectSnapshotSink", `
type: git
pathTemplate: '../{namespace}/{name}.yaml'
`, []string{"spec.pathTemplate", "'..'"}},
		{"sink pathTemplate without placeholders", "KollectSnapshotSink", `
type: git
pathTemplate: inventory.yaml
`, []string{"spec.pathTemplate", "{namespace} and {name}"}},
		{"sink option that looks like a credential", "KollectDatabaseSink", `
type: postgres
postgres: {databaseRef: {name: dsn}, table: t}
options: {dbPassword: hunter2}
`, []string{"spec.options", "credentials"}},
		{"kafka sink without brokers", "KollectEventSink", `
type: kafka
kafka: {topic: t}
`, []string{"spec.kafka.brokers", "Required value"}},
		{"nats sink without a url", "KollectEventSink", `
type: nats
nats: {subject: s}
`, []string{"spec.nats.url", "nats.url or spec.endpoint"}},
		{"connection test naming two sinks", "KollectConnectionTest", `
sinkRef: {databaseSinkRef: a, eventSinkRef: b}
`, []string{"spec.sinkRef", "exactly one"}},
		{"cluster target without namespaceSelector", "KollectClusterTarget", `
profileRef: {name: p, namespace: kollect-system}
`, []string{"namespaceSelector is required"}},
		{"cluster target with an empty namespaceSelector", "KollectClusterTarget", `
profileRef: {name: p, namespace: kollect-system}
namespaceSelector: {}
`, []string{"spec.namespaceSelector", "at least one"}},
		{"cluster target profileRef without namespace", "KollectClusterTarget", `
profileRef: {name: p}
namespaceSelector: {matchLabels: {a: b}}
`, []string{"spec.profileRef.namespace", "namespace"}},
		{"cluster inventory with a bad dedupe", "KollectClusterInventory", `
namespaceSelector: {matchLabels: {a: b}}
dedupe: byName
`, []string{"spec.dedupe", "Unsupported value"}},
		{"scope with an unknown field", "KollectScope", `
allowedKinds: [Deployment]
`, []string{"unknown field", "spec.allowedKinds"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := create(t, manifest(tc.kind, fmt.Sprintf("invalid-%d", i), tc.spec))
			if err == nil {
				t.Fatal("want rejected, got accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}
