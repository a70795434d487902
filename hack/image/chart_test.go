package main

import (
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The chart's OCI artifact is what helm push makes, and helm pulls it
// back from a registry it is pushed to, byte for byte.
func TestTheChartArtifactIsWhatHelmPullsBack(t *testing.T) {
	helm := os.Getenv("HELM")
	if helm == "" {
		helm = "../../bin/helm"
	}
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("helm not found at %s: run `make helm` (or set HELM): %v", helm, err)
	}
	dir := t.TempDir()
	if out, err := exec.Command(helm, "package", "../../deploy/helm/kollect", "--version", "9.9.9", "--app-version", "v9.9.9-test", "-d", dir).CombinedOutput(); err != nil {
		t.Fatalf("helm package: %v\n%s", err, out)
	}
	tgz := filepath.Join(dir, "kollect-9.9.9.tgz")
	want, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Chart(helm, tgz, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ref, "kollect:9.9.9@sha256:") {
		t.Errorf("reference %s", ref)
	}
	lp, err := layout.FromPath(filepath.Join(dir, "chart-oci"))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("layout index %+v %v", im, err)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil || m.Config.MediaType != "application/vnd.cncf.helm.config.v1+json" || len(m.Layers) != 1 ||
		m.Layers[0].MediaType != "application/vnd.cncf.helm.chart.content.v1.tar+gzip" {
		t.Fatalf("manifest %+v %v", m, err)
	}
	if got, err := lp.Bytes(m.Layers[0].Digest); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the chart layer is not the packaged chart (%d bytes, want %d): %v", len(got), len(want), err)
	}

	// Pushed from the layout to a registry, helm pulls the same chart.
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dst, err := name.ParseReference(host+"/charts/kollect:9.9.9", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(dst, img); err != nil {
		t.Fatal(err)
	}
	pulled := filepath.Join(dir, "pulled")
	if err := os.Mkdir(pulled, 0o755); err != nil {
		t.Fatal(err)
	}
	pull := exec.Command(helm, "pull", "oci://"+host+"/charts/kollect", "--version", "9.9.9", "--plain-http", "-d", pulled)
	pull.Env = append(os.Environ(), "HELM_REGISTRY_CONFIG="+filepath.Join(dir, "registry.json"))
	if out, err := pull.CombinedOutput(); err != nil {
		t.Fatalf("helm pull: %v\n%s", err, out)
	}
	if got, err := os.ReadFile(filepath.Join(pulled, "kollect-9.9.9.tgz")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("helm pulled %d bytes, want the packaged chart's %d: %v", len(got), len(want), err)
	}
}
