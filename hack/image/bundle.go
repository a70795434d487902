package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	semver "github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Bundle writes an OLM bundle (registry+v1) of the operator into
// out/bundle, from what the chart renders (rendered: helm template's
// output, CRDs included): the CRDs, a ClusterServiceVersion that installs
// the chart's Deployment with its ServiceAccount's cluster and namespace
// rules, and declares its validating webhooks for OLM to serve (OLM
// issues their certificate and mounts it where the manager looks,
// /tmp/k8s-webhook-server/serving-certs), and the bundle's annotations.
func Bundle(rendered, ver, image, out string) (string, error) {
	objs, err := readYAML(rendered)
	if err != nil {
		return "", err
	}
	v, err := semver.ParseTolerant(strings.TrimPrefix(ver, "v"))
	if err != nil {
		return "", fmt.Errorf("version %q: %w", ver, err)
	}
	dir := filepath.Join(out, "bundle")
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	for _, sub := range []string{"manifests", "metadata"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return "", err
		}
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: "operators.coreos.com/v1alpha1", Kind: "ClusterServiceVersion"},
		ObjectMeta: metav1.ObjectMeta{Name: "kollect.v" + v.String(), Annotations: map[string]string{
			"capabilities": "Basic Install", "categories": "Monitoring,Developer Tools", "containerImage": image,
			"description":  "Turns live cluster state into a durable inventory in Git, databases and event streams.",
			"repository":   "https://github.com/kollect-dev/kollect",
			"alm-examples": almExamples,
		}},
		Spec: operatorsv1alpha1.ClusterServiceVersionSpec{
			DisplayName: "Kollect",
			Description: "Kollect watches the resources your profiles select and exports the attributes they keep, in parallel, to Git, GitLab, object stores, PostgreSQL, MongoDB, BigQuery, Kafka and NATS JetStream.",
			Version:     version.OperatorVersion{Version: v},
			Maturity:    "alpha",
			Provider:    operatorsv1alpha1.AppLink{Name: "Kollect"},
			Keywords:    []string{"inventory", "gitops", "audit", "cmdb"},
			Links:       []operatorsv1alpha1.AppLink{{Name: "Source", URL: "https://github.com/kollect-dev/kollect"}},
			Maintainers: []operatorsv1alpha1.Maintainer{{Name: "Kollect", Email: "kollect@kollect.dev"}},
			InstallModes: []operatorsv1alpha1.InstallMode{
				{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: false},
				{Type: operatorsv1alpha1.InstallModeTypeSingleNamespace, Supported: false},
				{Type: operatorsv1alpha1.InstallModeTypeMultiNamespace, Supported: false},
				{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true},
			},
			MinKubeVersion: "1.30.0",
		},
	}
	strategy := operatorsv1alpha1.StrategyDetailsDeployment{}
	var sa string
	roles := map[string][]rbacv1.PolicyRule{} // kind/name → rules
	var bindings []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition":
			var crd apiextensionsv1.CustomResourceDefinition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &crd); err != nil {
				return "", err
			}
			for _, ver := range crd.Spec.Versions {
				if ver.Served {
					csv.Spec.CustomResourceDefinitions.Owned = append(csv.Spec.CustomResourceDefinitions.Owned, operatorsv1alpha1.CRDDescription{
						Name: crd.Name, Version: ver.Name, Kind: crd.Spec.Names.Kind, DisplayName: crd.Spec.Names.Kind,
						Description: description(ver)})
				}
			}
			if err := writeYAML(filepath.Join(dir, "manifests", crd.Spec.Group+"_"+crd.Spec.Names.Plural+".yaml"), o.Object); err != nil {
				return "", err
			}
		case "Deployment":
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				return "", err
			}
			sa = d.Spec.Template.Spec.ServiceAccountName
			strategy.DeploymentSpecs = append(strategy.DeploymentSpecs, operatorsv1alpha1.StrategyDeploymentSpec{Name: d.Name, Spec: d.Spec, Label: d.Labels})
		case "ClusterRole", "Role":
			var r rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
				return "", err
			}
			roles[o.GetKind()+"/"+o.GetName()] = r.Rules
		case "ClusterRoleBinding", "RoleBinding":
			bindings = append(bindings, o)
		case "ValidatingWebhookConfiguration":
			var vwc admissionregistrationv1.ValidatingWebhookConfiguration
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &vwc); err != nil {
				return "", err
			}
			for _, w := range vwc.Webhooks {
				path := "/"
				if w.ClientConfig.Service != nil && w.ClientConfig.Service.Path != nil {
					path = *w.ClientConfig.Service.Path
				}
				target := intstr.FromInt32(9443)
				csv.Spec.WebhookDefinitions = append(csv.Spec.WebhookDefinitions, operatorsv1alpha1.WebhookDescription{
					GenerateName: w.Name, Type: operatorsv1alpha1.ValidatingAdmissionWebhook, ContainerPort: 443, TargetPort: &target,
					Rules: w.Rules, FailurePolicy: w.FailurePolicy, SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds,
					AdmissionReviewVersions: w.AdmissionReviewVersions, WebhookPath: &path})
			}
		}
	}
	if len(strategy.DeploymentSpecs) != 1 || sa == "" {
		return "", fmt.Errorf("the rendered chart holds %d Deployments (want the manager's, with its ServiceAccount)", len(strategy.DeploymentSpecs))
	}
	for i := range csv.Spec.WebhookDefinitions {
		csv.Spec.WebhookDefinitions[i].DeploymentName = strategy.DeploymentSpecs[0].Name
	}
	// The rules of the roles bound to the manager's ServiceAccount: a
	// ClusterRole bound cluster-wide is a cluster permission, a role bound
	// in the release namespace a namespace permission.
	for _, b := range bindings {
		var rb rbacv1.RoleBinding
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(b.Object, &rb); err != nil {
			return "", err
		}
		bound := false
		for _, s := range rb.Subjects {
			bound = bound || (s.Kind == "ServiceAccount" && s.Name == sa)
		}
		rules, ok := roles[rb.RoleRef.Kind+"/"+rb.RoleRef.Name]
		if !bound || !ok {
			continue // a role the chart binds to others, or a built-in one (system:auth-delegator below)
		}
		p := operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: rules}
		if b.GetKind() == "ClusterRoleBinding" {
			strategy.ClusterPermissions = append(strategy.ClusterPermissions, p)
		} else {
			strategy.Permissions = append(strategy.Permissions, p)
		}
	}
	// system:auth-delegator's rules, which secure metrics and the read API
	// need (a CSV grants rules, not bindings to built-in roles).
	strategy.ClusterPermissions = append(strategy.ClusterPermissions, operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	}})
	csv.Spec.InstallStrategy = operatorsv1alpha1.NamedInstallStrategy{StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment, StrategySpec: strategy}
	if err := writeYAML(filepath.Join(dir, "manifests", "kollect.clusterserviceversion.yaml"), csv); err != nil {
		return "", err
	}
	annotations := map[string]any{"annotations": map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         "kollect",
		"operators.operatorframework.io.bundle.channels.v1":        "alpha",
		"operators.operatorframework.io.bundle.channel.default.v1": "alpha",
	}}
	if err := writeYAML(filepath.Join(dir, "metadata", "annotations.yaml"), annotations); err != nil {
		return "", err
	}
	return dir, nil
}

// almExamples are the objects OLM's console offers to create: a profile,
// a target that uses it and an inventory of the namespace's rows.
const almExamples = `[
  {"apiVersion": "kollect.dev/v1alpha1", "kind": "KollectProfile", "metadata": {"name": "deployment-images"},
   "spec": {"targetGVK": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "attributes": [{"name": "images", "path": "cel:object.spec.template.spec.containers.map(c, c.image)", "type": "list"}]}},
  {"apiVersion": "kollect.dev/v1alpha1", "kind": "KollectTarget", "metadata": {"name": "deployments"},
   "spec": {"profileRef": "deployment-images"}},
  {"apiVersion": "kollect.dev/v1alpha1", "kind": "KollectInventory", "metadata": {"name": "inventory"}, "spec": {}}
]`

// description is a CRD version's schema description, cut to a line.
func description(v apiextensionsv1.CustomResourceDefinitionVersion) string {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return ""
	}
	d, _, _ := strings.Cut(v.Schema.OpenAPIV3Schema.Description, "\n")
	return d
}

func readYAML(path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

func writeYAML(path string, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
