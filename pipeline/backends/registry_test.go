package backends

import (
	"context"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/deploy/crds"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// examples holds one sink of each registered type, as a user would write
// it: what the registry test admits and previews. A backend registered
// without one here fails TestEveryBackendIsRegisteredWhole.
var examples = map[string]client.Object{
	"snapshot/git": &kollectv1alpha1.KollectSnapshotSink{Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "git",
		SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "https://git.example.com/platform/inventory.git"}}},
	"snapshot/gitlab": &kollectv1alpha1.KollectSnapshotSink{Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "gitlab",
		SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "https://gitlab.example.com/platform/inventory"}}},
	"snapshot/s3": &kollectv1alpha1.KollectSnapshotSink{Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "s3",
		SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "s3://inventory/clusters"}}},
	"snapshot/gcs": &kollectv1alpha1.KollectSnapshotSink{Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "gcs",
		SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "gs://inventory/clusters"}}},
	"snapshot/azureblob": &kollectv1alpha1.KollectSnapshotSink{Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "azureblob",
		SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "azblob://inventory/clusters"}}},
	"database/postgres": &kollectv1alpha1.KollectDatabaseSink{Spec: kollectv1alpha1.KollectDatabaseSinkSpec{Type: "postgres",
		Postgres: &kollectv1alpha1.PostgresSpec{Table: "inventory"}}},
	"database/mongodb": &kollectv1alpha1.KollectDatabaseSink{Spec: kollectv1alpha1.KollectDatabaseSinkSpec{Type: "mongodb"}},
	"database/bigquery": &kollectv1alpha1.KollectDatabaseSink{Spec: kollectv1alpha1.KollectDatabaseSinkSpec{Type: "bigquery",
		BigQuery: &kollectv1alpha1.BigQuerySpec{Project: "p", Dataset: "d", Table: "inventory"}}},
	"event/nats": &kollectv1alpha1.KollectEventSink{Spec: kollectv1alpha1.KollectEventSinkSpec{Type: "nats",
		NATS: &kollectv1alpha1.NatsSpec{URL: "nats://nats.example.com:4222", Subject: "kollect.inventory"}}},
	"event/kafka": &kollectv1alpha1.KollectEventSink{Spec: kollectv1alpha1.KollectEventSinkSpec{Type: "kafka",
		Kafka: &kollectv1alpha1.KafkaSpec{Brokers: []string{"kafka.example.com:9092"}, Topic: "inventory"}}},
}

// apiTypes reads the spec.type enum of each sink kind from the generated
// CRDs: the types the API server lets a user write.
func apiTypes(t *testing.T) map[string][]string {
	t.Helper()
	families := map[string]string{"KollectSnapshotSink": "snapshot", "KollectDatabaseSink": "database", "KollectEventSink": "event"}
	out := map[string][]string{}
	err := crds.Each(func(_ string, data []byte) error {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return err
		}
		family, ok := families[crd.Spec.Names.Kind]
		if !ok {
			return nil
		}
		for _, v := range crd.Spec.Versions {
			typ := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["type"]
			for _, e := range typ.Enum {
				var name string
				if err := yaml.Unmarshal(e.Raw, &name); err != nil {
					return err
				}
				if !slices.Contains(out[family], name) {
					out[family] = append(out[family], name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(families) {
		t.Fatalf("spec.type enums found for %v, want the three sink kinds", out)
	}
	return out
}

// A backend is one Type in Types and its name in the API's enum: every
// piece a Type carries is there, every type a user may write has a
// backend, and every backend admits and previews its example sink.
func TestEveryBackendIsRegisteredWhole(t *testing.T) {
	api := apiTypes(t)
	registered := map[string]bool{}
	for _, typ := range Types() {
		id := typ.Family + "/" + typ.Name
		if registered[id] {
			t.Errorf("%s is registered twice", id)
		}
		registered[id] = true
		var missing []string
		for piece, absent := range map[string]bool{"Build": typ.Build == nil, "Admit": typ.Admit == nil,
			"Preview": typ.Preview == nil, "Verified": typ.Verified == ""} {
			if absent {
				missing = append(missing, piece)
			}
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			t.Errorf("%s has no %s", id, strings.Join(missing, ", "))
			continue
		}
		if !slices.Contains(api[typ.Family], typ.Name) {
			t.Errorf("%s is not in the API's spec.type enum: add it to the kubebuilder marker and run make generate", id)
		}
		sink, ok := examples[id]
		if !ok {
			t.Errorf("%s has no example sink in this test's examples", id)
			continue
		}
		sink.SetName("example")
		sink.SetNamespace("team-a")
		_, problems := typ.Admit(sink, func(string, string) []string { return nil })
		if len(problems) > 0 {
			t.Errorf("%s: its example is refused: %v", id, problems)
		}
		var p kollectv1alpha1.SinkPreviewStatus
		sample := sinktest.Snap(rows.Identity{Namespace: "team-a", Name: "inv", Generation: 1}, sinktest.Rows(1, "1"))
		if err := typ.Preview(sink, sample, &p); err != nil {
			t.Errorf("%s: preview: %v", id, err)
		} else if p.ObjectPath == "" && p.Postgres == nil && p.MongoDB == nil && p.Kafka == nil {
			t.Errorf("%s: the preview says nothing of what the sink writes: %+v", id, p)
		}
	}
	for family, names := range api {
		for _, name := range names {
			if !registered[family+"/"+name] {
				t.Errorf("the API lets users write %s sinks of type %s, but no backend is registered", family, name)
			}
		}
	}
}

// The checks of a type see every address its sink names: a kafka sink's
// brokers and a NATS sink's URL go through the endpoint guard.
func TestTypedAdmissionChecksEveryAddress(t *testing.T) {
	var checked []string
	check := func(field, raw string) []string {
		checked = append(checked, field+"="+raw)
		return []string{field + ": refused"}
	}
	for id, want := range map[string][]string{
		"event/kafka":  {"spec.kafka.brokers[0]=kafka.example.com:9092"},
		"event/nats":   {"spec.nats.url=nats://nats.example.com:4222"},
		"snapshot/git": nil,
	} {
		checked = nil
		_, problems := Admit(Types(), examples[id], check)
		if !slices.Equal(checked, want) || len(problems) != len(want) {
			t.Errorf("%s: checked %v (problems %v), want %v", id, checked, problems, want)
		}
	}
}

// memory is a backend added the way the registry promises: its package
// (here, this type) and one Type. Nothing else learns its name.
type memory struct{ held map[rows.Key]*rows.Row }

var (
	_ sinks.Prober = (*memory)(nil)
	_ sinks.Closer = (*memory)(nil)
)

func (m *memory) Export(_ context.Context, d *rows.Delta) (sinks.Ack, error) {
	m.held = map[rows.Key]*rows.Row{}
	for _, r := range d.Next.Rows {
		m.held[r.Key()] = r
	}
	return sinks.Ack{Written: len(d.Upserts)}, nil
}
func (m *memory) Probe(context.Context) error { return nil }
func (m *memory) Close()                      { m.held = nil }

func memoryType() Type {
	return Type{Family: "event", Name: "memory", Verified: "memory is always there",
		Build: func(context.Context, client.Object, Credentials, Env) (sinks.Backend, error) { return &memory{}, nil },
		Admit: func(sink client.Object, _ EndpointCheck) (warnings, problems []string) {
			if sink.GetAnnotations()["memory"] == "refuse" {
				problems = append(problems, "memory: refused as asked")
			}
			return nil, problems
		},
		Preview: func(_ client.Object, snap *rows.Snapshot, p *kollectv1alpha1.SinkPreviewStatus) error {
			p.ObjectPath = "memory:" + snap.Inventory.Name
			return nil
		}}
}

// One Type registers a backend with every part of the operator that goes
// through the registry: the probe, admission, preview and the cache that
// gives bindings their backends (with an id, so a backend holding a map
// by value is never compared).
func TestATinyBackendIsOneType(t *testing.T) {
	ctx := context.Background()
	types := []Type{memoryType()}
	sink := &kollectv1alpha1.KollectEventSink{ObjectMeta: metav1.ObjectMeta{Name: "mem", Namespace: "team-a",
		Annotations: map[string]string{"memory": "refuse"}}, Spec: kollectv1alpha1.KollectEventSinkSpec{Type: "memory"}}
	reg := New(endpoint.Policy{}, types...)
	if msg, reason, err := reg.Probe(ctx, nil, sink); err != nil || msg != "memory is always there" {
		t.Fatalf("probe: %q %s %v", msg, reason, err)
	}
	if _, problems := Admit(types, sink, nil); !slices.Equal(problems, []string{"memory: refused as asked"}) {
		t.Fatalf("admission did not reach the type: %v", problems)
	}
	var p kollectv1alpha1.SinkPreviewStatus
	if err := Preview(types, sink, sinktest.Snap(rows.Identity{Namespace: "team-a", Name: "inv"}, nil), &p); err != nil || p.ObjectPath != "memory:inv" {
		t.Fatalf("preview did not reach the type: %q %v", p.ObjectPath, err)
	}
	if err := Preview(Types(), sink, nil, &p); err != nil || !slices.Contains(p.Warnings, "memory sinks are not implemented in this version of Kollect") {
		t.Fatalf("a build without the type should say so in the preview: %v %v", p.Warnings, err)
	}
	cache := &Cache{Registry: reg}
	b1, id1 := cache.Bound(ctx, nil, "team-a/inv|event/mem", sink)
	b2, id2 := cache.Bound(ctx, nil, "team-a/inv|event/mem", sink)
	if _, ok := b1.(*memory); !ok || id1 == "" || id1 != id2 || b2 != b1 {
		t.Fatalf("the cache should give the built backend again with its id: %T %q %q", b1, id1, id2)
	}
	sink.Generation++ // an edit builds a new backend, with a new id
	if _, id3 := cache.Bound(ctx, nil, "team-a/inv|event/mem", sink); id3 == id1 || id3 == "" {
		t.Fatalf("a rebuilt backend kept the id %q", id3)
	}
	if _, err := reg.Type(&kollectv1alpha1.KollectEventSink{Spec: kollectv1alpha1.KollectEventSinkSpec{Type: "nats"}}); err == nil ||
		!strings.Contains(err.Error(), "nats sinks are not implemented") {
		t.Fatalf("a registry of the memory type alone has no nats: %v", err)
	}
}

// A built backend keeps the capabilities of the sink it wraps: a Git sink
// writing a file per row says its exports need no parts (splitting sorts
// and hashes every row again), and a document layout says it does.
func TestBuiltBackendsKeepTheirCapabilities(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		parts bool
	}{{"perResource", false}, {"document", true}} {
		sink := &kollectv1alpha1.KollectSnapshotSink{ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: "team"}}
		sink.Spec.Type, sink.Spec.Endpoint = "git", "file:///tmp/none.git"
		sink.Spec.Layout = &kollectv1alpha1.LayoutSpec{Mode: tc.mode}
		b, err := Default(endpoint.Policy{AllowLoopback: true}).Build(context.Background(), sink, Credentials{}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		for name, ok := range map[string]bool{"Prober": is[sinks.Prober](b), "Closer": is[sinks.Closer](b), "Keeper": is[sinks.Keeper](b)} {
			if !ok {
				t.Errorf("%s: the built Git backend %T is no %s", tc.mode, b, name)
			}
		}
		pw, ok := b.(sinks.PartWanter)
		if !ok {
			t.Fatalf("%s: the built Git backend %T does not say whether it wants parts", tc.mode, b)
		}
		snap := sinktest.Snap(rows.Identity{Namespace: "team", Name: "inv"}, sinktest.Rows(3, "1"))
		if got := pw.WantsParts(snap); got != tc.parts {
			t.Errorf("%s: WantsParts = %t, want %t", tc.mode, got, tc.parts)
		}
		closeBackend(b)
	}
}

func is[T any](b sinks.Backend) bool { _, ok := b.(T); return ok }
