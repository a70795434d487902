package main

import (
	"archive/tar"
	"encoding/json"
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
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image as a runtime sees it: loaded from the tarball, its config
// runs the binary as the non-root user, its labels say what it is, and
// the binary taken out of its layer runs (kollect version).
func TestImageLoadsAndItsBinaryRuns(t *testing.T) {
	dir := t.TempDir()
	// As make image builds them: static binaries for an image without libc
	// (the release test builds the same, so they share a build).
	var platforms []Platform
	for _, arch := range []string{"amd64", "arm64"} {
		bin := filepath.Join(dir, "kollect-"+arch)
		build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=v9.9.9-test", "-o", bin, ".")
		build.Dir = "../.."
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build the operator for %s: %v\n%s", arch, err, out)
		}
		sbom := filepath.Join(dir, "kollect-"+arch+".cdx.json")
		if err := os.WriteFile(sbom, []byte(`{"bomFormat":"CycloneDX","specVersion":"1.5","metadata":{"component":{"name":"kollect-`+arch+`"}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		platforms = append(platforms, Platform{Arch: arch, Binary: bin, SBOM: sbom})
	}
	out := filepath.Join(dir, "image")
	ref, err := Build(Options{Platforms: platforms, Repository: "ghcr.io/kollect-dev/kollect", Version: "v9.9.9-test", Revision: "abc123",
		Source: "https://github.com/kollect-dev/kollect", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ref, "ghcr.io/kollect-dev/kollect:v9.9.9-test@sha256:") {
		t.Errorf("reference %s", ref)
	}
	checkIndex(t, filepath.Join(out, "oci"), ref, platforms)
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
	files, owners, links := layerFiles(t, img)
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
}

// checkIndex reads the OCI layout back: one image index, tagged, with an
// image per platform whose config names it, and one SBOM artifact per
// image whose subject is that image; a registry takes the index and
// answers it with the same digest.
func checkIndex(t *testing.T, dir, ref string, platforms []Platform) {
	t.Helper()
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	root, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	rm, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var index v1.ImageIndex
	sboms := map[string]v1.Descriptor{} // subject digest → SBOM manifest
	for _, d := range rm.Manifests {
		switch {
		case d.MediaType == types.OCIImageIndex:
			if d.Annotations["org.opencontainers.image.ref.name"] != "ghcr.io/kollect-dev/kollect:v9.9.9-test" || !strings.HasSuffix(ref, d.Digest.String()) {
				t.Errorf("the index %s is named %q; the reference is %s", d.Digest, d.Annotations["org.opencontainers.image.ref.name"], ref)
			}
			if index, err = root.ImageIndex(d.Digest); err != nil {
				t.Fatal(err)
			}
		case d.ArtifactType == sbomType:
			raw, err := lp.Bytes(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			var m v1.Manifest
			if err := json.Unmarshal(raw, &m); err != nil || m.Subject == nil || len(m.Layers) != 1 || m.Layers[0].MediaType != sbomType {
				t.Fatalf("SBOM manifest %s: %v", raw, err)
			}
			sboms[m.Subject.Digest.String()] = m.Layers[0]
		}
	}
	if index == nil {
		t.Fatalf("the layout holds no image index: %+v", rm.Manifests)
	}
	im, err := index.IndexManifest()
	if err != nil || len(im.Manifests) != len(platforms) {
		t.Fatalf("index: %+v %v", im, err)
	}
	for i, d := range im.Manifests {
		want := platforms[i].Arch
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != want {
			t.Errorf("manifest %d: platform %+v, want linux/%s", i, d.Platform, want)
		}
		img, err := index.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil || cf.Architecture != want || strings.Join(cf.Config.Entrypoint, " ") != "/kollect" || cf.Config.Labels["org.opencontainers.image.version"] != "v9.9.9-test" {
			t.Errorf("%s config: %+v %v", want, cf, err)
		}
		_, _, links := layerFiles(t, img)
		if links["manager"] != "kollect" || links["kollect-pipeline"] != "kollect" {
			t.Errorf("%s: links %v, want /manager and /kollect-pipeline to the binary", want, links)
		}
		layer, ok := sboms[d.Digest.String()]
		if !ok {
			t.Errorf("%s: no SBOM names the image as its subject", want)
			continue
		}
		sbom, err := lp.Bytes(layer.Digest)
		if err != nil || !strings.Contains(string(sbom), "kollect-"+want) {
			t.Errorf("%s SBOM: %s %v", want, sbom, err)
		}
	}
	// A registry takes the index as built.
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	pushed, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://") + "/kollect:v9.9.9-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(pushed, index); err != nil {
		t.Fatal(err)
	}
	back, err := remote.Index(pushed)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := back.Digest(); !strings.HasSuffix(ref, d.String()) {
		t.Errorf("the registry answers %s for %s", d, ref)
	}
}

// layerFiles reads an image's one layer: each entry's content and owner,
// and the hard links by name.
func layerFiles(t *testing.T, img v1.Image) (files map[string][]byte, owners map[string]int, links map[string]string) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files, owners, links = map[string][]byte{}, map[string]int{}, map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, owners, links
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
}
