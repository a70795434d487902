//go:build integration

package release_test

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const version = "v9.9.9-test"

func run(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestAReleaseAsAUserChecksIt: make release's script, for linux/amd64 with
// a throwaway key, gives a static binary that runs, its SBOM, the chart,
// install.yaml pointing at the version's image, and checksums whose
// signature ssh-keygen verifies; a changed artifact or checksum list
// fails the checks a user runs.
func TestAReleaseAsAUserChecksIt(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	helm := os.Getenv("HELM")
	if helm == "" {
		helm = filepath.Join(root, "bin", "helm")
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "release-key")
	if out, err := run(t, dir, nil, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "kollect-release", "-f", key); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "out")
	if log, err := run(t, root, []string{"RELEASE_ARCHES=amd64", "RELEASE_SIGNING_KEY=" + key, "HELM=" + helm},
		"bash", "hack/release.sh", out, version); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, log)
	}
	bin := "kollect-" + version + "-linux-amd64"
	entries, _ := os.ReadDir(out)
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	want := []string{"SHA256SUMS", "SHA256SUMS.sig", "chart-oci", "chart.ref", "image", "image.ref", "install.yaml", "kollect-9.9.9-test.tgz", bin, bin + ".cdx.json", "kollect-" + version + "-olm-bundle.tar.gz"}
	if !slices.Equal(files, want) {
		t.Fatalf("artifacts %v, want %v", files, want)
	}

	// What a user runs (README, "Verifying a release").
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	signers := filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(signers, []byte("kollect-release "+string(pub)), 0o644); err != nil {
		t.Fatal(err)
	}
	verify := func() error {
		sums, err := os.Open(filepath.Join(out, "SHA256SUMS"))
		if err != nil {
			return err
		}
		defer sums.Close()
		cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", signers, "-I", "kollect-release", "-n", "kollect-release", "-s", filepath.Join(out, "SHA256SUMS.sig"))
		cmd.Stdin = sums
		if b, err := cmd.CombinedOutput(); err != nil {
			return &exec.ExitError{ProcessState: cmd.ProcessState, Stderr: b}
		}
		return nil
	}
	if err := verify(); err != nil {
		t.Fatalf("the signature does not verify: %v", err)
	}
	if log, err := run(t, out, nil, "sha256sum", "-c", "SHA256SUMS"); err != nil || strings.Count(log, ": OK") != 7 {
		t.Fatalf("sha256sum -c: %v\n%s", err, log)
	}

	// The binary: static, amd64, and it says its version.
	f, err := elf.Open(filepath.Join(out, bin))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary needs a dynamic loader; a release binary is static")
		}
	}
	if f.Machine != elf.EM_X86_64 {
		t.Errorf("machine %v", f.Machine)
	}
	f.Close()
	if log, err := run(t, out, nil, filepath.Join(out, bin), "version"); err != nil || !strings.Contains(log, version) {
		t.Errorf("kollect version: %v %s", err, log)
	}

	// The SBOM names the binary's version and its modules.
	raw, err := os.ReadFile(filepath.Join(out, bin+".cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	var bom struct {
		BOMFormat string
		Metadata  struct {
			Component struct{ Name, Version string }
		}
		Components []struct{ Name, Version, Purl string }
	}
	if err := json.Unmarshal(raw, &bom); err != nil || bom.BOMFormat != "CycloneDX" || bom.Metadata.Component.Version != version {
		t.Fatalf("SBOM: %v %+v", err, bom.Metadata)
	}
	var purls []string
	for _, c := range bom.Components {
		purls = append(purls, c.Purl)
	}
	for _, m := range []string{"pkg:golang/k8s.io/client-go@", "pkg:golang/github.com/asynkron/protoactor-go@", "pkg:golang/go.mongodb.org/mongo-driver/v2@"} {
		if !slices.ContainsFunc(purls, func(p string) bool { return strings.HasPrefix(p, m) }) {
			t.Errorf("the SBOM lacks %s (of %d components)", m, len(purls))
		}
	}

	// The chart and install.yaml run the version's image.
	if log, err := run(t, out, nil, "tar", "-xzf", "kollect-9.9.9-test.tgz", "-O", "kollect/Chart.yaml"); err != nil ||
		!strings.Contains(log, "version: 9.9.9-test") || !strings.Contains(log, "appVersion: "+version) {
		t.Errorf("Chart.yaml: %v\n%s", err, log)
	}
	manifest, _ := os.ReadFile(filepath.Join(out, "install.yaml"))
	if !strings.Contains(string(manifest), "image: ghcr.io/kollect-dev/kollect:"+version) || !strings.Contains(string(manifest), "kind: CustomResourceDefinition") {
		t.Error("install.yaml does not run the version's image or lacks the CRDs")
	}

	// The signed .ref files pin the OCI layouts: each names, by digest,
	// what its layout's index holds (hack/image tests the layouts).
	for _, l := range []struct{ ref, dir, prefix string }{
		{"image.ref", "image/oci", "ghcr.io/kollect-dev/kollect:" + version + "@sha256:"},
		{"chart.ref", "chart-oci", "kollect:9.9.9-test@sha256:"},
	} {
		ref, _ := os.ReadFile(filepath.Join(out, l.ref))
		var index struct {
			Manifests []struct{ Digest string }
		}
		raw, _ := os.ReadFile(filepath.Join(out, l.dir, "index.json"))
		if err := json.Unmarshal(raw, &index); err != nil || len(index.Manifests) == 0 {
			t.Fatalf("%s/index.json: %v %s", l.dir, err, raw)
		}
		got := strings.TrimSpace(string(ref))
		if !strings.HasPrefix(got, l.prefix) || !strings.HasSuffix(got, "@"+index.Manifests[0].Digest) {
			t.Errorf("%s is %q; %s/index.json names %s first", l.ref, got, l.dir, index.Manifests[0].Digest)
		}
	}

	// The OLM bundle holds the CSV, its CRDs and the bundle's annotations
	// (hack/image validates a bundle as operator-sdk does).
	if log, err := run(t, out, nil, "tar", "-tzf", "kollect-"+version+"-olm-bundle.tar.gz"); err != nil ||
		!strings.Contains(log, "bundle/manifests/kollect.clusterserviceversion.yaml") || !strings.Contains(log, "bundle/metadata/annotations.yaml") ||
		strings.Count(log, "bundle/manifests/kollect.dev_") != 11 {
		t.Errorf("the OLM bundle: %v\n%s", err, log)
	}

	// A changed artifact, or a changed checksum list, is caught.
	if err := os.WriteFile(filepath.Join(out, "install.yaml"), append(manifest, "# tampered\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, out, nil, "sha256sum", "--quiet", "-c", "SHA256SUMS"); err == nil {
		t.Error("sha256sum -c accepted a changed install.yaml")
	}
	sums, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err := os.WriteFile(filepath.Join(out, "SHA256SUMS"), append(sums, "0000  extra\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verify(); err == nil {
		t.Error("the signature verified a changed checksum list")
	}
}
