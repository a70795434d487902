package main

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The image as a runtime sees it: loaded from the tarball, its config
// runs the binary as the non-root user, its labels say what it is, and
// the binary taken out of its layer runs (kollect version).
func TestImageLoadsAndItsBinaryRuns(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kollect")
	// As make image builds it: a static binary for an image without libc
	// (the release test builds the same, so the two share a build).
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=v9.9.9-test", "-o", bin, ".")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the operator: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "image")
	ref, err := Build(Options{Binary: bin, Repository: "ghcr.io/kollect-dev/kollect", Version: "v9.9.9-test", Revision: "abc123",
		Source: "https://github.com/kollect-dev/kollect", Arch: "amd64", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ref, "ghcr.io/kollect-dev/kollect:v9.9.9-test@sha256:") {
		t.Errorf("reference %s", ref)
	}
	tag, _ := name.NewTag("ghcr.io/kollect-dev/kollect:v9.9.9-test")
	img, err := tarball.ImageFromPath(filepath.Join(out, "kollect.tar"), &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/kollect" || strings.Join(c.Cmd, " ") != "manager" ||
		cf.OS != "linux" || cf.Architecture != "amd64" || c.Labels["org.opencontainers.image.version"] != "v9.9.9-test" ||
		c.Labels["org.opencontainers.image.source"] != "https://github.com/kollect-dev/kollect" || c.Labels["org.opencontainers.image.revision"] != "abc123" {
		t.Errorf("config %+v (%s/%s)", c, cf.OS, cf.Architecture)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string][]byte{}
	owners := map[string]int{}
	links := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name], owners[h.Name] = b, h.Uid
		if h.Typeflag == tar.TypeLink {
			links[h.Name] = h.Linkname
		}
	}
	for _, name := range []string{"manager", "kollect-pipeline"} {
		if links[name] != "kollect" {
			t.Errorf("/%s links to %q, want the kollect binary (upstream's entrypoint)", name, links[name])
		}
	}
	if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") || owners["home/nonroot/"] != 65532 {
		t.Errorf("passwd %q, home owned by %d", files["etc/passwd"], owners["home/nonroot/"])
	}
	if _, shell := files["bin/sh"]; shell {
		t.Error("the image has a shell")
	}
	extracted := filepath.Join(dir, "from-image")
	if err := os.WriteFile(extracted, files["kollect"], 0o755); err != nil {
		t.Fatal(err)
	}
	v, err := exec.Command(extracted, "version").Output()
	if err != nil || strings.TrimSpace(string(v)) != "v9.9.9-test" {
		t.Fatalf("kollect version from the image: %q %v", v, err)
	}
	// Run by the link's name, with flags only, as upstream's Deployment
	// runs /manager, it is the manager.
	asManager := filepath.Join(dir, "manager")
	if err := os.Link(extracted, asManager); err != nil {
		t.Fatal(err)
	}
	if v, err := exec.Command(asManager, "--version").Output(); err != nil || strings.TrimSpace(string(v)) != "v9.9.9-test" {
		t.Fatalf("/manager --version from the image: %q %v", v, err)
	}
	asPipeline := filepath.Join(dir, "kollect-pipeline")
	if err := os.Link(extracted, asPipeline); err != nil {
		t.Fatal(err)
	}
	if help, err := exec.Command(asPipeline, "collect", "--help").Output(); err != nil || !strings.Contains(string(help), "--config") {
		t.Fatalf("/kollect-pipeline collect --help from the image: %v\n%s", err, help)
	}
	// The OCI layout names the same image.
	idx, err := layout.ImageIndexFromPath(filepath.Join(out, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != tag.String() {
		t.Fatalf("OCI layout index %+v %v", m, err)
	}
	// The docker-archive tarball rewrites the manifest (Docker media
	// types); the config is the same image's.
	fromLayout, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	lc, _ := fromLayout.ConfigName()
	tc, _ := img.ConfigName()
	if lc != tc || !strings.HasSuffix(ref, m.Manifests[0].Digest.String()) {
		t.Errorf("layout config %s, tarball config %s; reference %s, layout manifest %s", lc, tc, ref, m.Manifests[0].Digest)
	}
}
