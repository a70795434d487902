//go:build conformance

package conformance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

const kollectAPI = "kollect.dev/v1alpha1"

// rejection is a document the target behaviour says must be refused, with
// the field and the words the error must carry.
type rejection struct {
	kind, name string
	field, msg string
}

// fileCase is the target behaviour of one corpus file: every document is
// accepted unless listed in rejects; check verifies what the README says the
// accepted objects mean.
type fileCase struct {
	namespace string
	rejects   []rejection
	check     func(t *testing.T)
}

// cases is keyed by the file's path inside the corpus. Every corpus file
// must appear here, so a new sample cannot slip through untested.
var cases = map[string]fileCase{
	"examples/kollecttarget_trivy-high.yaml": {
		// Upstream rejects both the scope (sinkRefs) and the profile; we accept
		// sinkRefs as an alias and keep rejecting un-prefixed CEL paths.
		rejects: []rejection{{"KollectProfile", "trivy-vulnerability-summary", "spec.attributes[0].path", "cel: prefix"}},
		check: func(t *testing.T) {
			scope := get(t, kollectAPI, "KollectScope", "sec-ops", "sec-ops-scope")
			wantStrings(t, scope, []string{"sec-ops-git"}, "spec", "sinkRefs")
		},
	},
	"samples/advanced/kollect_v1alpha1_kollectclusterinventory.yaml": {check: func(t *testing.T) {
		var ci kollectv1alpha1.KollectClusterInventory
		typed(t, "", "platform-rollup", &ci)
		if ci.Spec.SinkNamespace != "kollect-system" || ci.Spec.Dedupe != "keepAll" || ci.Spec.ExportMinInterval != "30s" {
			t.Errorf("defaults: want sinkNamespace kollect-system, dedupe keepAll, 30s; got %q %q %q", ci.Spec.SinkNamespace, ci.Spec.Dedupe, ci.Spec.ExportMinInterval)
		}
		if r := ci.Spec.SnapshotSinkRefs; len(r) != 1 || r[0].Name != "team-git" || r[0].Namespace != "team-a" {
			t.Errorf("snapshot ref: want team-a/team-git, got %+v", r)
		}
	}},
	"samples/advanced/kollect_v1alpha1_kollectconnectiontest.yaml": {check: func(t *testing.T) {
		var ct kollectv1alpha1.KollectConnectionTest
		typed(t, "default", "postgres-sink-probe", &ct)
		if ct.Spec.TTLSecondsAfterFinished == nil || *ct.Spec.TTLSecondsAfterFinished != 300 {
			t.Errorf("ttlSecondsAfterFinished: want the default 300, got %v", ct.Spec.TTLSecondsAfterFinished)
		}
	}},
	"samples/advanced/kollect_v1alpha1_kollectdatabasesink.yaml":          {},
	"samples/advanced/kollect_v1alpha1_kollectdatabasesink_bigquery.yaml": {},
	"samples/advanced/kollect_v1alpha1_kollectdatabasesink_mongodb.yaml":  {},
	"samples/advanced/kollect_v1alpha1_kollecteventsink_kafka.yaml":       {},
	"samples/advanced/kollect_v1alpha1_kollectinventory.yaml": {check: func(t *testing.T) {
		inv := inventory(t, "default", "team-inventory")
		wantBinding(t, inv.Spec.DatabaseSinkRefs, "postgres-inventory-demo", "", nil)
		wantBinding(t, inv.Spec.SnapshotSinkRefs, "git-inventory-demo", "1h", nil)
	}},
	"samples/advanced/kollect_v1alpha1_kollectinventory_export-partitioning.yaml": {check: func(t *testing.T) {
		inv := inventory(t, "default", "partitioned-inventory")
		if inv.Spec.MaxExportBytes == nil || *inv.Spec.MaxExportBytes != 1048576 {
			t.Errorf("maxExportBytes: want 1048576, got %v", inv.Spec.MaxExportBytes)
		}
		wantBinding(t, inv.Spec.DatabaseSinkRefs, "postgres-inventory-demo", "", nil)
		wantBinding(t, inv.Spec.SnapshotSinkRefs, "git-inventory-demo", "1h", ptr(int64(524288)))
	}},
	"samples/advanced/kollect_v1alpha1_kollectinventory_sharded.yaml": {check: func(t *testing.T) {
		for _, ns := range []string{"team-a", "team-b"} {
			inv := inventory(t, ns, ns+"-inventory")
			wantBinding(t, inv.Spec.DatabaseSinkRefs, "postgres-inventory-demo", "", nil)
		}
	}},
	"samples/advanced/kollect_v1alpha1_kollectsnapshotsink.yaml":            {},
	"samples/advanced/kollect_v1alpha1_kollectsnapshotsink_git_layout.yaml": {},
	"samples/advanced/kollect_v1alpha1_kollectsnapshotsink_git_minimal.yaml": {check: func(t *testing.T) {
		var s kollectv1alpha1.KollectSnapshotSink
		typed(t, "default", "git-inventory-minimal", &s)
		if s.Spec.Type != "git" || s.Spec.Git != nil {
			t.Errorf("want type git with no git block (all defaults), got type %q git %+v", s.Spec.Type, s.Spec.Git)
		}
	}},
	"samples/advanced/kollect_v1alpha1_kollectsnapshotsink_git_resource_tree.yaml": {},
	"samples/advanced/kollect_v1alpha1_kollectsnapshotsink_s3.yaml":                {},
	"samples/demo/git-only/inventory.yaml": {check: func(t *testing.T) {
		inv := inventory(t, "default", "demo-inventory")
		wantBinding(t, inv.Spec.SnapshotSinkRefs, "hero-git-sink", "", nil)
		if inv.Spec.ExportMinInterval != "15s" {
			t.Errorf("exportMinInterval: want 15s, got %q", inv.Spec.ExportMinInterval)
		}
	}},
	"samples/demo/git-only/profile.yaml":          {},
	"samples/demo/git-only/sink.yaml":             {},
	"samples/demo/git-only/target.yaml":           {},
	"samples/demo/git-postgres/databasesink.yaml": {},
	"samples/demo/git-postgres/inventory.yaml": {check: func(t *testing.T) {
		inv := inventory(t, "default", "demo-inventory")
		wantBinding(t, inv.Spec.DatabaseSinkRefs, "hero-postgres-sink", "", nil)
	}},
	"samples/dev/postgres.yaml":      {},
	"samples/e2e/snapshot-sink.yaml": {},
	"samples/e2e/team-inventory.yaml": {check: func(t *testing.T) {
		inv := inventory(t, "default", "team-inventory")
		if inv.Spec.ExportMinInterval != "30s" {
			t.Errorf("exportMinInterval: want the default 30s, got %q", inv.Spec.ExportMinInterval)
		}
	}},
	"samples/kollect_v1alpha1_kollectclustertarget.yaml":                        {},
	"samples/kollect_v1alpha1_kollecteventsink_nats.yaml":                       {},
	"samples/kollect_v1alpha1_kollectprofile.yaml":                              {},
	"samples/kollect_v1alpha1_kollectprofile_argo-application-snapshot.yaml":    {},
	"samples/kollect_v1alpha1_kollectprofile_argo-application-summary.yaml":     {},
	"samples/kollect_v1alpha1_kollectprofile_certificate-summary.yaml":          {},
	"samples/kollect_v1alpha1_kollectprofile_deployment-snapshot.yaml":          {},
	"samples/kollect_v1alpha1_kollectprofile_helm-release-summary.yaml":         {},
	"samples/kollect_v1alpha1_kollectprofile_helm-release-values-redacted.yaml": {},
	"samples/kollect_v1alpha1_kollectprofile_ingress-hosts.yaml":                {},
	"samples/kollect_v1alpha1_kollectprofile_platform-argo-summary.yaml":        {},
	"samples/kollect_v1alpha1_kollectprofile_service-endpoints.yaml":            {},
	"samples/kollect_v1alpha1_kollectscope_team-a.yaml":                         {},
	"samples/kollect_v1alpha1_kollecttarget.yaml":                               {},
	"samples/kollect_v1alpha1_kollecttarget_argo-applications.yaml":             {},
	"samples/kollect_v1alpha1_kollecttarget_certificates.yaml":                  {},
	"samples/kollect_v1alpha1_kollecttarget_helm-releases.yaml":                 {},
	"samples/kollect_v1alpha1_kollecttarget_opt-in.yaml": {check: func(t *testing.T) {
		var tgt kollectv1alpha1.KollectTarget
		typed(t, "default", "opt-in-deployments", &tgt)
		if tgt.Spec.WatchMode != "OptIn" {
			t.Errorf("watchMode: want OptIn, got %q", tgt.Spec.WatchMode)
		}
		ns := get(t, "v1", "Namespace", "", "inventory-demo")
		if ns.GetLabels()["kollect.dev/watch"] != "enabled" {
			t.Errorf("namespace inventory-demo: want label kollect.dev/watch=enabled, got %v", ns.GetLabels())
		}
	}},
	"samples/pipeline/deployment-images/profile.yaml": {},
	"samples/pipeline/deployment-images/target.yaml":  {},
	"samples/pipeline/git-sink/credentials.yaml":      {},
	"samples/pipeline/git-sink/profile.yaml":          {},
	"samples/pipeline/git-sink/sink.yaml":             {},
	"samples/pipeline/git-sink/target.yaml":           {},
	"samples/pipeline/helm-releases/profile.yaml":     {},
	"samples/pipeline/helm-releases/target.yaml":      {},
	"samples/pipeline/ingress-hosts/profile.yaml":     {},
	"samples/pipeline/ingress-hosts/target.yaml":      {},
	"samples/pipeline/namespaces/profile.yaml":        {},
	"samples/pipeline/namespaces/target.yaml":         {},
	// The team-operator files carry no namespace; kustomize supplies team-a.
	"samples/team-operator/inventory.yaml": {namespace: "team-a"},
	"samples/team-operator/kollectscope.yaml": {namespace: "team-a", check: func(t *testing.T) {
		scope := get(t, kollectAPI, "KollectScope", "team-a", "team-a-scope")
		wantStrings(t, scope, []string{"team-a-snapshot"}, "spec", "sinkRefs")
	}},
	"samples/team-operator/profile.yaml": {namespace: "team-a"},
	"samples/team-operator/snapshot-sink.yaml": {namespace: "team-a", check: func(t *testing.T) {
		var s kollectv1alpha1.KollectSnapshotSink
		typed(t, "team-a", "team-a-snapshot", &s)
		if s.Spec.Git == nil || s.Spec.Git.Endpoint == "" || s.Spec.Git.PathTemplate != "inventory/snapshot.json" {
			t.Errorf("want the nested git.endpoint and git.pathTemplate aliases kept, got %+v", s.Spec.Git)
		}
	}},
	"samples/team-operator/target.yaml":                  {namespace: "team-a"},
	"samples/team-operator/workload-collector-rbac.yaml": {namespace: "team-a"},
}

func TestEverySampleHasItsTargetAdmissionOutcome(t *testing.T) {
	ensureNamespaces(t, "kollect-system", "team-a", "team-b", "demo", "sec-ops")
	files := corpusFiles(t)
	seen := map[string]bool{}
	for _, file := range files {
		seen[file] = true
		tc, ok := cases[file]
		if !ok {
			t.Errorf("%s: the corpus has a file this suite has no expectation for", file)
			continue
		}
		t.Run(file, func(t *testing.T) { runFile(t, file, tc) })
	}
	for file := range cases {
		if !seen[file] {
			t.Errorf("%s: expected by the suite but missing from the corpus at %s", file, corpusDir)
		}
	}
}

func runFile(t *testing.T, file string, tc fileCase) {
	docs, err := readDocs(corpusDir + "/" + file)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no objects in file")
	}
	for _, doc := range docs {
		if doc.GetNamespace() == "" && tc.namespace != "" {
			doc.SetNamespace(tc.namespace)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := apply(ctx, doc)
		cancel()
		want := findRejection(tc.rejects, doc)
		switch {
		case want == nil && err != nil:
			t.Errorf("%s %s: want accepted, got: %v", doc.GetKind(), doc.GetName(), err)
		case want != nil && err == nil:
			t.Errorf("%s %s: want rejected (%s: %s), got accepted", doc.GetKind(), doc.GetName(), want.field, want.msg)
		case want != nil:
			for _, w := range []string{want.field, want.msg} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s %s: rejection does not mention %q: %v", doc.GetKind(), doc.GetName(), w, err)
				}
			}
		}
	}
	if tc.check != nil && !t.Failed() {
		tc.check(t)
	}
}

func findRejection(rs []rejection, doc *unstructured.Unstructured) *rejection {
	for i := range rs {
		if rs[i].kind == doc.GetKind() && rs[i].name == doc.GetName() {
			return &rs[i]
		}
	}
	return nil
}

func typed(t *testing.T, namespace, name string, obj client.Object) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		t.Fatalf("get %s/%s: %v", namespace, name, err)
	}
}

func inventory(t *testing.T, namespace, name string) *kollectv1alpha1.KollectInventory {
	t.Helper()
	var inv kollectv1alpha1.KollectInventory
	typed(t, namespace, name, &inv)
	return &inv
}

// wantBinding checks that refs hold exactly one binding with these values:
// the upstream plain-string form must decode to the same object form.
func wantBinding(t *testing.T, refs []kollectv1alpha1.InventorySinkRef, name, interval string, maxBytes *int64) {
	t.Helper()
	if len(refs) != 1 {
		t.Errorf("want one binding %q, got %+v", name, refs)
		return
	}
	r := refs[0]
	if r.Name != name || r.ExportMinInterval != interval || (maxBytes == nil) != (r.MaxExportBytes == nil) ||
		(maxBytes != nil && *maxBytes != *r.MaxExportBytes) {
		t.Errorf("binding: want {%s %q %v}, got %+v", name, interval, maxBytes, r)
	}
}

func wantStrings(t *testing.T, u *unstructured.Unstructured, want []string, path ...string) {
	t.Helper()
	got, _, err := unstructured.NestedStringSlice(u.Object, path...)
	if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s: want %v kept, got %v (%v)", strings.Join(path, "."), want, got, err)
	}
}

func ptr[T any](v T) *T { return &v }
