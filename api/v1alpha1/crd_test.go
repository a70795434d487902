//go:build integration

package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestAllElevenCRDsAreServedWithShortNames(t *testing.T) {
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := env.Client.List(ctx(t), &crds); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, crd := range crds.Items {
		if crd.Spec.Group != "kollect.dev" {
			continue
		}
		got[crd.Spec.Names.Kind] = strings.Join(crd.Spec.Names.ShortNames, ",")
		if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1alpha1" || !crd.Spec.Versions[0].Storage {
			t.Errorf("%s: want the single storage version v1alpha1, got %+v", crd.Name, crd.Spec.Versions)
		}
	}
	want := map[string]string{
		"KollectProfile": "kprof", "KollectTarget": "ktgt", "KollectClusterTarget": "kctgt",
		"KollectInventory": "kinv", "KollectClusterInventory": "kcinv", "KollectSnapshotSink": "ksnap",
		"KollectDatabaseSink": "kdb", "KollectEventSink": "kevt", "KollectScope": "kscope",
		"KollectClusterScope": "kcscope", "KollectConnectionTest": "kconntest",
	}
	if len(got) != len(want) {
		t.Errorf("want %d kollect.dev CRDs, got %d: %v", len(want), len(got), got)
	}
	for kind, short := range want {
		if got[kind] != short {
			t.Errorf("%s: want short name %q, got %q", kind, short, got[kind])
		}
	}
}

// TestReconciledKindsHavePrinterColumns checks that `kubectl get` answers
// "is it working?" for every kind the operator reconciles.
func TestReconciledKindsHavePrinterColumns(t *testing.T) {
	want := map[string][]string{
		"kollecttargets":            {"Ready", "Degraded", "Collected", "Age"},
		"kollectclustertargets":     {"Ready", "Degraded", "Collected", "Age"},
		"kollectinventories":        {"Ready", "Degraded", "Items", "Exported", "Last Export", "Age"},
		"kollectclusterinventories": {"Ready", "Degraded", "Items", "Exported", "Last Export", "Age"},
		"kollectsnapshotsinks":      {"Type", "Verified", "Degraded", "Age"},
		"kollectdatabasesinks":      {"Type", "Verified", "Degraded", "Age"},
		"kollecteventsinks":         {"Type", "Verified", "Degraded", "Age"},
		"kollectconnectiontests":    {"Sink", "Verified", "Age"},
	}
	for plural, cols := range want {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := env.Client.Get(ctx(t), types.NamespacedName{Name: plural + ".kollect.dev"}, &crd); err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
			have[c.Name] = true
		}
		for _, c := range cols {
			if !have[c] {
				t.Errorf("%s: missing printer column %q", plural, c)
			}
		}
	}
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(ctx(t), ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
}

func decode(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("bad test YAML: %v\n%s", err, doc)
	}
	return u
}

// create applies doc with strict field validation, as `kubectl apply` does.
func create(t *testing.T, doc string) error {
	t.Helper()
	u := decode(t, doc)
	if u.GetNamespace() == "" && !clusterScoped(u.GetKind()) {
		u.SetNamespace("crd-test")
	}
	return env.Client.Create(ctx(t), u, client.FieldValidation(metav1.FieldValidationStrict))
}

func clusterScoped(kind string) bool {
	switch kind {
	case "KollectClusterTarget", "KollectClusterInventory", "KollectClusterScope":
		return true
	}
	return false
}

// TestSinkRefsWrittenAsStringsDecodeToObjects covers upstream samples that
// write `databaseSinkRefs: [name]`: the API server stores them as written and
// the Go types read them as {name: ...}.
func TestSinkRefsWrittenAsStringsDecodeToObjects(t *testing.T) {
	createNamespace(t, "crd-test")
	doc := manifest("KollectInventory", "string-refs", `
databaseSinkRefs: [warehouse]
snapshotSinkRefs: [{name: git, exportMinInterval: 1h}]
`)
	if err := create(t, doc); err != nil {
		t.Fatal(err)
	}
	var inv kollectv1alpha1.KollectInventory
	if err := env.Client.Get(ctx(t), types.NamespacedName{Namespace: "crd-test", Name: "string-refs"}, &inv); err != nil {
		t.Fatal(err)
	}
	if got := inv.Spec.DatabaseSinkRefs; len(got) != 1 || got[0].Name != "warehouse" {
		t.Errorf("databaseSinkRefs: want [{Name: warehouse}], got %+v", got)
	}
	if got := inv.Spec.SnapshotSinkRefs; len(got) != 1 || got[0].Name != "git" || got[0].ExportMinInterval != "1h" {
		t.Errorf("snapshotSinkRefs: want [{Name: git, ExportMinInterval: 1h}], got %+v", got)
	}
	if inv.Spec.ExportMinInterval != "30s" {
		t.Errorf("exportMinInterval: want the schema default 30s, got %q", inv.Spec.ExportMinInterval)
	}
}
