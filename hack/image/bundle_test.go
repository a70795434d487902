package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
)

// The OLM bundle of the chart passes the validators operator-sdk bundle
// validate runs by default (the CSV, the CRDs, the bundle as a whole),
// and its CSV owns every CRD, installs the manager and declares every
// validating webhook.
func TestTheOLMBundleValidates(t *testing.T) {
	helm := os.Getenv("HELM")
	if helm == "" {
		helm = "../../bin/helm"
	}
	dir := t.TempDir()
	rendered := filepath.Join(dir, "rendered.yaml")
	out, err := exec.Command(helm, "template", "kollect", "../../deploy/helm/kollect", "--namespace", "kollect-system", "--include-crds",
		"--set", "image.tag=v9.9.9-test").Output()
	if err != nil {
		t.Fatalf("helm template (make helm, or set HELM): %v", err)
	}
	if err := os.WriteFile(rendered, out, 0o644); err != nil {
		t.Fatal(err)
	}
	bundleDir, err := Bundle(rendered, "v9.9.9-test", "ghcr.io/kollect-dev/kollect:v9.9.9-test", dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := manifests.GetBundleFromDir(bundleDir)
	if err != nil {
		t.Fatalf("load the bundle: %v", err)
	}
	for _, r := range validation.DefaultBundleValidators.Validate(b.ObjectsToValidate()...) {
		for _, e := range r.Errors {
			t.Errorf("%s: %v", r.Name, e)
		}
		for _, w := range r.Warnings {
			t.Logf("%s (warning): %v", r.Name, w)
		}
	}
	csv := b.CSV
	if csv == nil || csv.Spec.Version.String() != "9.9.9-test" || len(b.V1CRDs) != 11 || len(csv.Spec.CustomResourceDefinitions.Owned) != 11 {
		t.Fatalf("CSV %v, %d CRDs", csv != nil, len(b.V1CRDs))
	}
	deps := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deps) != 1 || deps[0].Spec.Template.Spec.Containers[0].Image != "ghcr.io/kollect-dev/kollect:v9.9.9-test" {
		t.Errorf("deployments %+v", deps)
	}
	if n := len(csv.Spec.WebhookDefinitions); n != 11 {
		t.Errorf("%d webhook definitions, want one per kind (11)", n)
	}
	if len(csv.Spec.InstallStrategy.StrategySpec.ClusterPermissions) == 0 {
		t.Error("the CSV grants no cluster permissions")
	}
}
