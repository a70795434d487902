//go:build integration

package admission_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/pipeline/admission"
)

var (
	env *testenv.Env
	mgr *testenv.Manager
)

// TestMain starts a control plane with the validating webhooks installed
// and the real manager serving them, as the chart deploys it.
func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.StartWithWebhooks(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Tenant mode changes only what the webhooks say of the cluster kinds.
	if mgr, err = env.StartManager("--tenant-mode", "--watch-namespaces=team-a,team-b"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	if err := mgr.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		code = 1
	}
	_ = env.Stop()
	os.Exit(code)
}

type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

// apply server-side applies one document through the API server (and so
// through the webhooks) and returns the error and the warnings.
func apply(t *testing.T, doc string) ([]string, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("bad YAML: %v\n%s", err, doc)
	}
	w := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Patch(context.Background(), u, client.Apply, client.ForceOwnership, client.FieldOwner("test"),
		client.FieldValidation(metav1.FieldValidationStrict))
	return w.seen, err
}

func mustApply(t *testing.T, docs ...string) {
	t.Helper()
	for _, d := range docs {
		if _, err := apply(t, d); err != nil {
			t.Fatalf("apply: %v\n%s", err, d)
		}
	}
}

const setup = `apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: v1
kind: Namespace
metadata: {name: cluster}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectScope
metadata: {name: team-a-scope, namespace: team-a}
spec:
  allowedGVKs: [{group: "", version: v1, kind: ConfigMap}]
  allowedNamespaces: [team-a]
  minExportInterval: 1m
---
apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: configmaps, namespace: team-a}
spec:
  targetGVK: {group: "", version: v1, kind: ConfigMap}
  attributes: [{name: colour, path: '$.data.colour'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: deployments, namespace: team-a}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes: [{name: replicas, path: '$.spec.replicas'}]
`

// TestAdmission runs each webhook rule through the real API server:
// what a webhook refuses, with its message, and what it accepts.
func TestAdmission(t *testing.T) {
	for _, d := range strings.Split(setup, "\n---\n") {
		mustApply(t, d)
	}
	cases := []struct {
		name    string
		doc     string
		refused string // words of the rejection, or "" when accepted
		warning string // words of a warning expected
	}{
		{"Secret data without the opt-in", `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: secrets, namespace: team-b}
spec:
  targetGVK: {group: "", version: v1, kind: Secret}
  attributes: [{name: password, path: '$.data.password'}]`, `KollectProfile "secrets" is invalid: spec.attributes[0].path: "$.data.password" can read the data of a Secret; set the annotation kollect.dev/allow-secret-extraction`, ""},
		{"Secret data with the opt-in", `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: secrets-opted, namespace: team-b, annotations: {kollect.dev/allow-secret-extraction: "true"}}
spec:
  targetGVK: {group: "", version: v1, kind: Secret}
  attributes: [{name: password, path: '$.data.password'}]`, "", ""},
		{"CEL that does not compile", `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: bad-cel, namespace: team-b}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes: [{name: x, path: 'cel:object.spec.replicas +'}]`, "spec.attributes[0].path", ""},
		{"JSONPath filters warn", `apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: filtered, namespace: team-b}
spec:
  targetGVK: {group: apps, version: v1, kind: Deployment}
  attributes: [{name: x, path: '$.spec.template.spec.containers[?(@.name=="app")].image'}]`, "", "JSONPath filters"},
		{"a kind the scope does not allow", `apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: deployments, namespace: team-a}
spec: {profileRef: deployments}`, `apps/v1/Deployment is not in KollectScope "team-a-scope" allowedGVKs`, ""},
		{"a namespace the scope does not allow", `apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: other-team, namespace: team-a}
spec: {profileRef: configmaps, includedNamespaces: [team-b]}`, `workload namespace "team-b" is not in KollectScope "team-a-scope" allowedNamespaces`, ""},
		{"a target naming another namespace without a scope", `apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: kube-system, namespace: team-b}
spec: {profileRef: configmaps, includedNamespaces: [kube-system]}`, `workload namespace "kube-system" is outside the operator's default namespace ceiling`, ""},
		{"an inventory in the namespace of cluster inventories' rows", `apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: fleet, namespace: cluster}
spec: {snapshotSinkRefs: [{name: git}]}`, `namespace "cluster" is the inventory namespace every KollectClusterInventory's rows carry`, ""},
		{"a target within its scope", `apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: own, namespace: team-a}
spec: {profileRef: configmaps, includedNamespaces: [team-a]}`, "", ""},
		{"an interval below the floor", `apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: fast, namespace: team-a}
spec:
  exportMinInterval: 10s
  snapshotSinkRefs: [{name: git, exportMinInterval: 20s}]`, `spec.exportMinInterval: 10s is below the minimum export interval 1m0s of KollectScope "team-a-scope"`, ""},
		{"an omitted interval is raised at runtime, not refused", `apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: defaulted, namespace: team-a}
spec: {snapshotSinkRefs: [git]}`, "", ""},
		{"a sink interval below the floor", `apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: pg, namespace: team-a}
spec:
  type: postgres
  exportMinInterval: 5s
  postgres: {databaseRef: {name: dsn}, table: items}`, "spec.exportMinInterval: 5s is below the minimum export interval", ""},
		{"a BigQuery API root over plain http", `apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: analytics, namespace: team-b}
spec:
  type: bigquery
  endpoint: "http://bigquery.example.com"
  bigquery: {project: p, dataset: d, table: t}`, "", "BigQuery requests carry an access token"},
		{"a MongoDB sink with an endpoint it does not use", `apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: documents, namespace: team-b}
spec:
  type: mongodb
  endpoint: "mongodb://db.example.com"
  mongodb: {databaseRef: {name: uri}, database: d, collection: c}`, "", "spec.endpoint is not used by mongodb sinks"},
		{"the metadata service", `apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: metadata, namespace: team-b}
spec: {type: git, endpoint: "http://169.254.169.254/latest/meta-data"}`, "spec.endpoint", ""},
		{"the metadata service by name", `apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: metadata-name, namespace: team-b}
spec: {type: git, endpoint: "https://metadata.google.internal/repo.git"}`, `endpoint host "metadata.google.internal" is not allowed`, ""},
		{"a local repository", `apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: local, namespace: team-b}
spec: {type: git, endpoint: "file:///etc"}`, "file:// endpoints are not allowed", ""},
		{"a loopback broker", `apiVersion: kollect.dev/v1alpha1
kind: KollectEventSink
metadata: {name: kafka, namespace: team-b}
spec:
  type: kafka
  kafka: {brokers: ["kafka.example.com:9092", "127.0.0.1:9092"], topic: t}`, "spec.kafka.brokers[1]", ""},
		{"a metadata NATS server in NAT64 form", `apiVersion: kollect.dev/v1alpha1
kind: KollectEventSink
metadata: {name: nats, namespace: team-b}
spec:
  type: nats
  nats: {url: "nats://[64:ff9b::a9fe:a9fe]:4222", subject: s}`, "spec.nats.url", ""},
		{"a public sink, with its warnings", `apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: github, namespace: team-b}
spec: {type: git, endpoint: "https://github.com/example/inventory.git", pathTemplate: "inventory/{namespace}/{name}.json"}`, "", "not JSON"},
		{"credentials over plain HTTP warn", `apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: plain, namespace: team-b}
spec: {type: git, endpoint: "http://git.example.com/inventory.git", secretRef: {name: git-credentials}}`, "", "plain http://"},
		{"upstream's git CLI engine is accepted and says go-git pushes", `apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: cli-engine, namespace: team-b}
spec: {type: git, endpoint: "https://git.example.com/inventory.git", git: {engine: cli, cloneDepth: 3}}`, "", "fetches and pushes with go-git"},
		{"a connection test naming two sinks", `apiVersion: kollect.dev/v1alpha1
kind: KollectConnectionTest
metadata: {name: two, namespace: team-b}
spec: {sinkRef: {snapshotSinkRef: a, databaseSinkRef: b}}`, "set exactly one of", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			warns, err := apply(t, tc.doc)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Fatalf("accepted; want a rejection with %q", tc.refused)
			case tc.refused != "" && !strings.Contains(err.Error(), tc.refused):
				t.Fatalf("rejection %q does not say %q", err, tc.refused)
			}
			if tc.warning != "" && !strings.Contains(strings.Join(warns, "\n"), tc.warning) {
				t.Fatalf("warnings %q do not say %q", warns, tc.warning)
			}
		})
	}
}

// TestTenantModeRefusesClusterKinds: the suite's manager runs in tenant
// mode, where cluster targets and inventories are refused outright.
func TestTenantModeRefusesClusterKinds(t *testing.T) {
	for _, doc := range []string{`apiVersion: kollect.dev/v1alpha1
kind: KollectClusterTarget
metadata: {name: everything}
spec:
  profileRef: {name: configmaps, namespace: team-a}
  namespaceSelector: {matchLabels: {team: a}}`, `apiVersion: kollect.dev/v1alpha1
kind: KollectClusterInventory
metadata: {name: rollup}
spec:
  targetRefs: [everything]
  namespaceSelector: {matchLabels: {team: a}}`} {
		if _, err := apply(t, doc); err == nil || !strings.Contains(err.Error(), "tenant mode") {
			t.Fatalf("want a tenant-mode rejection, got %v", err)
		}
	}
}

// TestConfigurationCoversEveryKind checks the webhook configuration names
// the real resources of the eleven kinds (a misspelt plural would leave a
// kind unvalidated without any error).
func TestConfigurationCoversEveryKind(t *testing.T) {
	cfg := admission.Configuration("x", func(string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{}
	})
	if len(cfg.Webhooks) != 11 {
		t.Fatalf("%d webhooks, want 11", len(cfg.Webhooks))
	}
	for _, w := range cfg.Webhooks {
		for _, r := range w.Rules {
			for _, res := range r.Resources {
				var crd apiextensionsv1.CustomResourceDefinition
				if err := env.Client.Get(context.Background(), client.ObjectKey{Name: res + ".kollect.dev"}, &crd); err != nil {
					t.Errorf("webhook %s: resource %s: %v", w.Name, res, err)
				}
			}
		}
	}
}

// TestTenantsApplyWithTheirOwnIdentity: two teams, each a service account
// with a Role over the Kollect kinds of its own namespace, apply through
// the API server as themselves. RBAC keeps each out of the other's
// namespace; the webhooks hold each inside its scope and warn of a Secret
// the operator will not read for it.
func TestTenantsApplyWithTheirOwnIdentity(t *testing.T) {
	for _, d := range strings.Split(setup, "\n---\n") {
		mustApply(t, d)
	}
	as := map[string]client.Client{}
	for _, team := range []string{"team-a", "team-b"} {
		mustApply(t, fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: gitops, namespace: %[1]s}`, team), fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: kollect-editor, namespace: %[1]s}
rules:
- apiGroups: [kollect.dev]
  resources: [kollectprofiles, kollecttargets, kollectinventories, kollectsnapshotsinks, kollectdatabasesinks, kollecteventsinks, kollectconnectiontests]
  verbs: [get, list, watch, create, update, patch, delete]`, team), fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: kollect-editor, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: kollect-editor}
subjects: [{kind: ServiceAccount, name: gitops, namespace: %[1]s}]`, team))
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + team + ":gitops"}
		c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		as[team] = c
	}
	applyAs := func(team, doc string) error {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		return as[team].Patch(context.Background(), u, client.Apply, client.ForceOwnership, client.FieldOwner(team))
	}
	// team-a reaches for team-b's namespace, first through its own target,
	// then by writing there.
	err := applyAs("team-a", `apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: theirs, namespace: team-a}
spec: {profileRef: configmaps, includedNamespaces: [team-b]}`)
	if err == nil || !strings.Contains(err.Error(), `workload namespace "team-b" is not in KollectScope "team-a-scope" allowedNamespaces`) {
		t.Fatalf("team-a's target on team-b: want the scope's refusal, got %v", err)
	}
	err = applyAs("team-a", `apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: planted, namespace: team-b}
spec: {profileRef: configmaps}`)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("team-a writing into team-b: want Forbidden, got %v", err)
	}
	// team-b (no scope) may collect its own namespace; its sink naming the
	// platform's Secret is admitted with a warning that says it will not be
	// read.
	if err := applyAs("team-b", `apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: own, namespace: team-b}
spec: {profileRef: configmaps, includedNamespaces: [team-b]}`); err != nil {
		t.Fatalf("team-b's own target: %v", err)
	}
	warns, err := apply(t, `apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: borrowed, namespace: team-b}
spec:
  type: postgres
  postgres: {databaseRef: {name: inventory-dsn, namespace: kollect-system}, table: items}`)
	if err != nil || !strings.Contains(strings.Join(warns, "\n"), `Secret kollect-system/inventory-dsn is outside namespace "team-b"`) {
		t.Fatalf("want a warning about the Secret, got %v %v", err, warns)
	}
}
