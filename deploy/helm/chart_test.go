//go:build integration

// Package helm_test checks the Helm chart: helm lint, the values schema,
// and a server-side dry-run apply of everything it renders against the
// test control plane, with default values, every option on, and tenant
// mode.
package helm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/pipeline/admission"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

const chart = "kollect"

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		bin = filepath.Join(env.RepoRoot, "bin", "helm")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("helm not found at %s: run `make helm` (or set HELM): %v", bin, err)
	}
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func render(t *testing.T, valueFiles ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", "kollect", chart, "--namespace", "kollect-system"}
	for _, f := range valueFiles {
		if f == withCertManager {
			args = append(args, "--api-versions", "cert-manager.io/v1")
			continue
		}
		if strings.HasPrefix(f, "--set=") {
			args = append(args, f)
			continue
		}
		args = append(args, "-f", f)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", valueFiles, err, out)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("rendered YAML: %v", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return out
}

func TestLint(t *testing.T) {
	for _, values := range [][]string{nil, {"testdata/all-on.yaml"}, {"testdata/tenant.yaml"}, {"testdata/upstream-values.yaml"}} {
		args := []string{"lint", chart, "--strict"}
		for _, v := range values {
			args = append(args, "-f", v)
		}
		if out, err := helm(t, args...); err != nil || !strings.Contains(out, "0 chart(s) failed") {
			t.Errorf("helm lint %v: %v\n%s", values, err, out)
		}
	}
}

func TestValuesSchemaRejectsWrongTypes(t *testing.T) {
	out, err := helm(t, "template", "kollect", chart, "-f", "testdata/wrong-type.yaml")
	if err == nil || !strings.Contains(out, "replicaCount") || !strings.Contains(out, "port") {
		t.Fatalf("want the schema to reject replicaCount and metrics.port, got %v\n%s", err, out)
	}
	out, err = helm(t, "template", "kollect", chart, "--set", "tenantMode=true")
	if err == nil || !strings.Contains(out, "watchNamespaces") {
		t.Fatalf("tenant mode without watchNamespaces: want a schema error, got %v\n%s", err, out)
	}
	out, err = helm(t, "template", "kollect", chart, "--set", "metricz.enabled=true")
	if err == nil || !strings.Contains(out, "metricz") {
		t.Fatalf("a misspelt key: want a schema error, got %v\n%s", err, out)
	}
}

// TestRenderedObjectsApply dry-runs every rendered object with
// server-side apply and strict field validation.
func TestRenderedObjectsApply(t *testing.T) {
	ctx := context.Background()
	var crds []byte
	for _, f := range []string{"testdata/monitoring-crds.yaml", "testdata/cert-manager-crds.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crds = append(append(crds, b...), "\n---\n"...)
	}
	for _, doc := range strings.Split(strings.TrimSuffix(string(crds), "\n---\n"), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Patch(ctx, u, client.Apply, client.FieldOwner("test"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{"kollect-system", "team-a", "team-b", "monitoring"} {
		_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	testenv.Eventually(t, 30*time.Second, "the monitoring CRDs are served", func() error {
		var l unstructured.UnstructuredList
		l.SetAPIVersion("monitoring.coreos.com/v1")
		l.SetKind("PrometheusRuleList")
		if err := env.Client.List(ctx, &l); err != nil {
			return err
		}
		l.SetAPIVersion("cert-manager.io/v1")
		l.SetKind("CertificateList")
		return env.Client.List(ctx, &l)
	})
	for name, values := range map[string][]string{"default": nil, "all-on": {"testdata/all-on.yaml"}, "tenant": {"testdata/tenant.yaml"},
		"cert-manager": {withCertManager}, "upstream": {"testdata/upstream-values.yaml"},
		"upstream, own namespace": {"testdata/upstream-values.yaml", "--set=createNamespace=true,metrics.bindAddress=:9090,oauth2Proxy.enabled=true"}} {
		t.Run(name, func(t *testing.T) {
			objs := render(t, values...)
			for _, o := range objs {
				err := env.Client.Patch(ctx, o, client.Apply, client.FieldOwner("helm"), client.ForceOwnership, client.DryRunAll,
					client.FieldValidation(metav1.FieldValidationStrict))
				if err != nil {
					t.Errorf("%s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
			got := kinds(objs)
			switch name {
			case "all-on":
				for _, want := range []string{"ServiceMonitor/kollect", "PrometheusRule/kollect", "NetworkPolicy/kollect",
					"PodDisruptionBudget/kollect", "ClusterRole/kollect-metrics-reader", "Role/kollect-sink-secrets"} {
					if !slices.Contains(got, want) {
						t.Errorf("all-on render lacks %s: %v", want, got)
					}
				}
			case "default":
				for _, want := range []string{"ValidatingWebhookConfiguration/kollect-validating-webhook-configuration",
					"Service/kollect-webhook-service", "ClusterRole/kollect-webhook-ca"} {
					if !slices.Contains(got, want) {
						t.Errorf("default render lacks %s: %v", want, got)
					}
				}
				webhooksMatchTheOperator(t, objs)
			case "cert-manager":
				for _, want := range []string{"Certificate/kollect-serving-cert", "Issuer/kollect-selfsigned-issuer"} {
					if !slices.Contains(got, want) {
						t.Errorf("cert-manager render lacks %s: %v", want, got)
					}
				}
				if slices.Contains(got, "ClusterRole/kollect-webhook-ca") {
					t.Error("with cert-manager the operator needs no right on the webhook configuration")
				}
			case "upstream":
				upstreamValuesMean(t, objs, "8443")
				if slices.Contains(got, "Namespace/kollect-system") {
					t.Error("createNamespace=false renders the namespace")
				}
			case "upstream, own namespace":
				upstreamValuesMean(t, objs, "9090")
				ns := objs[slices.Index(got, "Namespace/kollect-system")]
				if ns.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
					t.Errorf("the release namespace must survive an uninstall: %v", ns.GetAnnotations())
				}
			case "tenant":
				for _, k := range got {
					if strings.HasPrefix(k, "ClusterRole") {
						t.Errorf("tenant mode renders %s; it must stay namespaced", k)
					}
				}
			}
		})
	}
}

// TestDefaultsAreLeastPrivilegeAndHardened: no Secret access cluster-wide,
// no wildcard kinds, a hardened pod, leader election on, and a metrics
// reader role so Prometheus can scrape as installed.
func TestDefaultsAreLeastPrivilegeAndHardened(t *testing.T) {
	objs := render(t)
	var dep *unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			for _, r := range rules {
				m := r.(map[string]any)
				res, _, _ := unstructured.NestedStringSlice(m, "resources")
				groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
				if slices.Contains(res, "secrets") || (slices.Contains(res, "*") && !slices.Equal(groups, []string{"kollect.dev"})) {
					t.Errorf("ClusterRole %s grants %v on %v", o.GetName(), res, groups)
				}
			}
		case "Deployment":
			dep = o
		}
	}
	if !slices.Contains(kinds(objs), "ClusterRole/kollect-metrics-reader") {
		t.Error("no metrics-reader ClusterRole: /metrics would not be scrapeable as installed")
	}
	if dep == nil {
		t.Fatal("no Deployment rendered")
	}
	c, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	ctr := c[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(ctr, "args")
	for _, want := range []string{"manager", "--leader-elect=true", "--metrics-bind-address=:8443", "--metrics-secure=true", "--namespace-ceiling=own", "--health-probe-bind-address=:8081"} {
		if !slices.Contains(args, want) {
			t.Errorf("manager args lack %s: %v", want, args)
		}
	}
	for path, want := range map[string]any{"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false} {
		if v, _, _ := unstructured.NestedFieldNoCopy(ctr, "securityContext", path); v != want {
			t.Errorf("securityContext.%s = %v, want %v", path, v, want)
		}
	}
	if v, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "spec", "securityContext", "seccompProfile", "type"); v != "RuntimeDefault" {
		t.Errorf("seccompProfile %q", v)
	}
	if v, _, _ := unstructured.NestedBool(dep.Object, "spec", "template", "spec", "securityContext", "runAsNonRoot"); !v {
		t.Error("runAsNonRoot is not set")
	}
}

// TestAlertRulesParse checks the chart's alerting rules with promtool
// (Debian's prometheus package; `make test-deps` installs it) and runs
// their unit tests (files/alerts_test.yaml).
func TestAlertRulesParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found: run `make test-deps`: %v", err)
	}
	out, err := exec.Command(promtool, "check", "rules", "kollect/files/alerts.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS: 11 rules found") {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	// Each alert fires on the series that should raise it and stays quiet
	// on healthy ones (upstream's five names included).
	test := exec.Command(promtool, "test", "rules", "alerts_test.yaml")
	test.Dir = "kollect/files"
	if out, err := test.CombinedOutput(); err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// withCertManager, given to render, renders as if cert-manager's API
// were installed.
const withCertManager = "--api-versions=cert-manager.io/v1"

// webhooksMatchTheOperator compares the chart's webhook configuration with
// the one the operator's own tests install: same names, paths, resources.
func webhooksMatchTheOperator(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	want := map[string]string{}
	for _, w := range admission.Configuration("x", func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Path: &path}}
	}).Webhooks {
		want[w.Name] = *w.ClientConfig.Service.Path + " " + strings.Join(w.Rules[0].Resources, ",")
	}
	got := map[string]string{}
	for _, o := range objs {
		if o.GetKind() != "ValidatingWebhookConfiguration" {
			continue
		}
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			m := h.(map[string]any)
			path, _, _ := unstructured.NestedString(m, "clientConfig", "service", "path")
			rules, _, _ := unstructured.NestedSlice(m, "rules")
			res, _, _ := unstructured.NestedStringSlice(rules[0].(map[string]any), "resources")
			got[m["name"].(string)] = path + " " + strings.Join(res, ",")
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("chart webhooks:\n%v\nthe operator's:\n%v", got, want)
	}
}

// TestNothingLocksTheClusterOrWidensATenant: with the NetworkPolicy on,
// the API server can still reach the fail-closed webhooks; Secrets are
// only ever read by name; the role meant for teams cannot write the
// scopes that grant them more; a scrape needs HTTPS and a token.
func TestNothingLocksTheClusterOrWidensATenant(t *testing.T) {
	objs := render(t, "testdata/all-on.yaml")
	find := func(kind, name string) *unstructured.Unstructured {
		for _, o := range objs {
			if o.GetKind() == kind && o.GetName() == name {
				return o
			}
		}
		t.Fatalf("no %s %s rendered: %v", kind, name, kinds(objs))
		return nil
	}
	ingress, _, _ := unstructured.NestedSlice(find("NetworkPolicy", "kollect").Object, "spec", "ingress")
	admitted := map[string]bool{}
	for _, rule := range ingress {
		ports, _, _ := unstructured.NestedSlice(rule.(map[string]any), "ports")
		for _, p := range ports {
			admitted[fmt.Sprint(p.(map[string]any)["port"])] = true
		}
	}
	if !admitted["9443"] || !admitted["8443"] || !admitted["8081"] || !admitted["8082"] {
		t.Errorf("the NetworkPolicy admits ports %v; want the webhooks (9443), metrics (8443), probes (8081) and the read API (8082)", admitted)
	}
	for _, o := range objs {
		if o.GetKind() != "Role" && o.GetKind() != "ClusterRole" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		for _, r := range rules {
			m := r.(map[string]any)
			res, _, _ := unstructured.NestedStringSlice(m, "resources")
			verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
			if slices.Contains(res, "secrets") && (slices.Contains(verbs, "list") || slices.Contains(verbs, "watch")) {
				t.Errorf("%s %s lists or watches Secrets: %v", o.GetKind(), o.GetName(), verbs)
			}
			if o.GetName() == "kollect-tenant" && (slices.Contains(res, "kollectscopes") || slices.Contains(res, "*")) &&
				slices.ContainsFunc(verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
				t.Errorf("the tenant role may write scopes: %v %v", res, verbs)
			}
		}
	}
	sm := find("ServiceMonitor", "kollect")
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["scheme"] != "https" || endpoints[0].(map[string]any)["bearerTokenFile"] == nil {
		t.Errorf("the ServiceMonitor does not scrape over HTTPS with a token: %v", endpoints)
	}
	_ = find("ClusterRole", "kollect-tenant")
	_ = find("ClusterRoleBinding", "kollect-auth-delegator")
}

// upstreamValuesMean checks that an upstream values file keeps its
// meaning: the metrics port of metrics.bindAddress on the flag, the
// container and the Service, and the sample interval as a flag.
func upstreamValuesMean(t *testing.T, objs []*unstructured.Unstructured, port string) {
	t.Helper()
	var args []string
	var containerPort, servicePort string
	for _, o := range objs {
		switch {
		case o.GetKind() == "Deployment":
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			c := cs[0].(map[string]any)
			a, _, _ := unstructured.NestedStringSlice(c, "args")
			args = a
			ps, _, _ := unstructured.NestedSlice(c, "ports")
			for _, p := range ps {
				if p.(map[string]any)["name"] == "metrics" {
					containerPort = fmt.Sprint(p.(map[string]any)["containerPort"])
				}
			}
		case o.GetKind() == "Service" && strings.HasSuffix(o.GetName(), "controller-manager"):
			ps, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
			for _, p := range ps {
				if p.(map[string]any)["name"] == "metrics" {
					servicePort = fmt.Sprint(p.(map[string]any)["port"])
				}
			}
		}
	}
	for _, want := range []string{"--metrics-bind-address=:" + port, "--metrics-secure=true", "--collect-metrics-sample-interval=30s", "--leader-elect-lease-duration=30s"} {
		if !slices.Contains(args, want) {
			t.Errorf("the manager's args lack %s: %v", want, args)
		}
	}
	if containerPort != port || servicePort != port {
		t.Errorf("metrics port: container %q, Service %q, want %s", containerPort, servicePort, port)
	}
}

// docs/migrating.md lists every value of upstream's chart
// (testdata/upstream-values.yaml holds them all), and every value it
// lists is one the schema accepts.
func TestMigratingListsEveryUpstreamValue(t *testing.T) {
	doc, err := os.ReadFile("../../docs/migrating.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Chart values\n")
	if !ok {
		t.Fatal(`docs/migrating.md has no "## Chart values"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	listed := map[string]bool{}
	names := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		for _, m := range names.FindAllStringSubmatch(cells[1], -1) {
			listed[m[1]] = true
		}
	}
	var upstream map[string]any
	b, err := os.ReadFile("testdata/upstream-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := utilyaml.Unmarshal(b, &upstream); err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	b, err = os.ReadFile(filepath.Join(chart, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	for key := range upstream {
		if !listed[key] {
			t.Errorf("docs/migrating.md does not list upstream's value %s", key)
		}
	}
	for key := range listed {
		if _, ok := schema.Properties[key]; !ok {
			t.Errorf("docs/migrating.md lists %s, which values.schema.json does not accept", key)
		}
	}
}
