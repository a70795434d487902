//go:build integration

package manager_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"os"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/pipeline/manager"
)

// webhookConfiguration creates a configuration of two webhooks that
// intercept nothing, whose CA bundles the manager maintains.
func webhookConfiguration(t *testing.T, name string) {
	t.Helper()
	none := admissionregistrationv1.SideEffectClassNone
	hook := func(n string) admissionregistrationv1.ValidatingWebhook {
		u := "https://localhost:9443/" + n
		return admissionregistrationv1.ValidatingWebhook{Name: n + ".kollect.dev", SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &u},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"example.invalid"}, APIVersions: []string{"v1"}, Resources: []string{"nothing"}}}}}
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{hook("targets"), hook("sinks")}}
	if err := env.Client.Create(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
}

// bundles returns the number of certificates in each webhook's bundle and
// the configuration's size in bytes.
func bundles(t *testing.T, name string) ([]int, int) {
	t.Helper()
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := env.Client.Get(context.Background(), types.NamespacedName{Name: name}, &cfg); err != nil {
		t.Fatal(err)
	}
	var counts []int
	size := 0
	for _, w := range cfg.Webhooks {
		n, rest := 0, w.ClientConfig.CABundle
		size += len(rest)
		for b, r := pem.Decode(rest); b != nil; b, r = pem.Decode(r) {
			n++
		}
		counts = append(counts, n)
	}
	return counts, size
}

// TestRestartsDoNotGrowTheWebhookBundle starts the operator's webhook
// certificate 300 times against one control plane, as a crash loop would:
// with the CA Secret every start reuses one CA and the bundle holds it
// alone; without it (no namespace to keep it in) each start brings its
// own CA and the bundle still holds at most two.
func TestRestartsDoNotGrowTheWebhookBundle(t *testing.T) {
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kollect-system"}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		starts int
		want   int // certificates in each bundle at the end
	}{
		{"shared CA", []string{"--leader-election-namespace=kollect-system"}, 300, 1},
		{"CA in memory", []string{"--leader-election-namespace=kollect-system", "--webhook-ca-secret-name="}, 60, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "kollect-" + map[bool]string{true: "shared", false: "memory"}[tc.want == 1]
			webhookConfiguration(t, name)
			o := parse(t, append([]string{"--webhook-configuration-name=" + name, "--webhook-cert-path=" + t.TempDir()}, tc.args...)...)
			var first []byte
			maxSize := 0
			for i := 0; i < tc.starts; i++ {
				dir, err := manager.IssueWebhookCertificate(ctx, env.Config, o)
				if err != nil {
					t.Fatalf("start %d: %v", i, err)
				}
				if i == 0 {
					first = readFile(t, dir+"/tls.crt")
				}
				if _, size := bundles(t, name); size > maxSize {
					maxSize = size
				}
			}
			counts, size := bundles(t, name)
			for _, n := range counts {
				if n != tc.want {
					t.Fatalf("after %d starts the bundles hold %v certificates, want %d each", tc.starts, counts, tc.want)
				}
			}
			t.Logf("%d starts: bundles of %v certificates, %d bytes (largest seen %d)", tc.starts, counts, size, maxSize)
			if len(first) == 0 {
				t.Fatal("no certificate written")
			}
		})
	}
	var sec corev1.Secret
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: "kollect-system", Name: "kollect-webhook-ca"}, &sec); err != nil {
		t.Fatalf("the shared CA is not kept: %v", err)
	}
	if !bytes.Contains(sec.Data["ca.crt"], []byte("BEGIN CERTIFICATE")) || len(sec.Data["ca.key"]) == 0 {
		t.Fatal("the CA Secret holds no CA")
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
