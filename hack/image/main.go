// Command image assembles Kollect's container image without Docker: the
// static kollect binary on an empty base, with the passwd and group
// entries of a non-root user (UID/GID 65532, as distroless "nonroot") and
// no shell. Trusted CA roots are compiled into the binary (the fallback
// bundle from golang.org/x/crypto/x509roots), so the image needs no CA
// file. It writes an OCI image layout and a tarball that docker load,
// crane push and skopeo accept.
//
//	go run . -platform amd64=kollect-amd64,sbom-amd64.json -platform arm64=kollect-arm64,sbom-arm64.json -version v0.1.0 -out ../../bin/image
package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Options say what to build.
type Options struct {
	// Platforms are the images of the index, one per architecture.
	Platforms  []Platform
	Repository string // the name it is pushed as (the chart's default image)
	Version    string
	Revision   string // the source commit
	Source     string // the source repository URL
	Out        string // folder for oci/ and kollect.tar
	// Created is the image's creation time; zero uses the epoch, so the
	// same binaries give the same digests.
	Created time.Time
}

// Platform is one architecture's image: its static linux binary and,
// when set, the binary's CycloneDX SBOM, attached to the image as an OCI
// referrer (an artifact whose subject is the image).
type Platform struct {
	Arch, Binary, SBOM string
}

// parsePlatform reads arch=binary[,sbom].
func parsePlatform(v string) (Platform, error) {
	arch, files, ok := strings.Cut(v, "=")
	bin, sbom, _ := strings.Cut(files, ",")
	if !ok || arch == "" || bin == "" {
		return Platform{}, fmt.Errorf("-platform %q: want arch=binary[,sbom.json]", v)
	}
	return Platform{Arch: arch, Binary: bin, SBOM: sbom}, nil
}

const uid = 65532

// Media types of the SBOM referrers.
const (
	sbomType  = "application/vnd.cyclonedx+json"
	emptyType = "application/vnd.oci.empty.v1+json"
)

func main() {
	var o Options
	flag.Func("platform", "arch=binary[,sbom.json]: one architecture's static linux binary and its SBOM (repeat for each).", func(v string) error {
		p, err := parsePlatform(v)
		o.Platforms = append(o.Platforms, p)
		return err
	})
	flag.StringVar(&o.Repository, "repository", "ghcr.io/kollect-dev/kollect", "The repository the image is pushed to.")
	flag.StringVar(&o.Version, "version", "dev", "The version (also the tag).")
	flag.StringVar(&o.Revision, "revision", "", "The source commit.")
	flag.StringVar(&o.Source, "source", "https://github.com/kollect-dev/kollect", "The source repository.")
	flag.StringVar(&o.Out, "out", "bin/image", "Output folder.")
	chart := flag.String("chart", "", "Instead of the image: a packaged chart (.tgz) to write as an OCI artifact in OUT/chart-oci, as helm push makes it.")
	helm := flag.String("helm", "helm", "The helm binary (-chart).")
	bundle := flag.String("bundle", "", "Instead of the image: the chart rendered with its CRDs (helm template --include-crds), to write as an OLM bundle in OUT/bundle for -version, running -image.")
	image := flag.String("image", "", "The image reference the OLM bundle's CSV names (-bundle).")
	flag.Parse()
	if *bundle != "" {
		dir, err := Bundle(*bundle, o.Version, *image, o.Out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "image:", err)
			os.Exit(1)
		}
		fmt.Printf("bundle %s\n", dir)
		return
	}
	if *chart != "" {
		ref, err := Chart(*helm, *chart, o.Out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "image:", err)
			os.Exit(1)
		}
		fmt.Printf("chart %s\n  OCI layout: %s\n", ref, filepath.Join(o.Out, "chart-oci"))
		return
	}
	ref, err := Build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("image %s\n  OCI layout: %s (an index of %d platforms, each with its SBOM)\n  tarball:    %s (%s; docker load -i, crane push, skopeo copy docker-archive:)\n",
		ref, filepath.Join(o.Out, "oci"), len(o.Platforms), filepath.Join(o.Out, "kollect.tar"), o.Platforms[0].Arch)
}

// Build writes the image index (one image per platform, each with its
// SBOM referrer) as an OCI layout, and the first platform's image as a
// docker-archive tarball, and returns the index's reference with digest.
func Build(o Options) (string, error) {
	if len(o.Platforms) == 0 {
		return "", fmt.Errorf("no platform to build (-platform arch=binary)")
	}
	tag, err := name.NewTag(o.Repository + ":" + o.Version)
	if err != nil {
		return "", err
	}
	var adds []mutate.IndexAddendum
	images := make([]v1.Image, len(o.Platforms))
	for i, p := range o.Platforms {
		img, err := image(o, p)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p.Arch, err)
		}
		images[i] = img
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: p.Arch}}})
	}
	idx := mutate.IndexMediaType(mutate.AppendManifests(empty.Index, adds...), types.OCIImageIndex)
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return "", err
	}
	oci := filepath.Join(o.Out, "oci")
	if err := os.RemoveAll(oci); err != nil {
		return "", err
	}
	lp, err := layout.Write(oci, empty.Index)
	if err != nil {
		return "", err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag.String()})); err != nil {
		return "", err
	}
	for i, p := range o.Platforms {
		if p.SBOM == "" {
			continue
		}
		if err := attachSBOM(lp, images[i], p.SBOM); err != nil {
			return "", fmt.Errorf("%s SBOM: %w", p.Arch, err)
		}
	}
	if err := tarball.WriteToFile(filepath.Join(o.Out, "kollect.tar"), tag, images[0]); err != nil {
		return "", err
	}
	d, err := idx.Digest()
	if err != nil {
		return "", err
	}
	return tag.String() + "@" + d.String(), nil
}

// image is one platform's image: the binary on an empty base.
func image(o Options, p Platform) (v1.Image, error) {
	bin, err := os.ReadFile(p.Binary)
	if err != nil {
		return nil, err
	}
	fs, err := rootfs(bin, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(fs)), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg := cf.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", p.Arch
	cfg.Created = v1.Time{Time: o.Created}
	cfg.Config.User = fmt.Sprintf("%d:%d", uid, uid)
	cfg.Config.Entrypoint = []string{"/kollect"}
	cfg.Config.Cmd = []string{"manager"}
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"PATH=/", "HOME=/home/nonroot"}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "kollect",
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.source":   o.Source,
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	return mutate.ConfigFile(img, cfg)
}

// attachSBOM writes the SBOM at path into the layout as an OCI 1.1
// artifact whose subject is img (registries list it among img's
// referrers), and lists it in the layout's index.
func attachSBOM(lp layout.Path, img v1.Image, path string) error {
	sbom, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	subject, err := partial.Descriptor(img)
	if err != nil {
		return err
	}
	emptyCfg := []byte("{}")
	blob := func(b []byte) (v1.Hash, error) {
		h, _, err := v1.SHA256(bytes.NewReader(b))
		if err != nil {
			return h, err
		}
		return h, lp.WriteBlob(h, io.NopCloser(bytes.NewReader(b)))
	}
	cfgHash, err := blob(emptyCfg)
	if err != nil {
		return err
	}
	sbomHash, err := blob(sbom)
	if err != nil {
		return err
	}
	m := map[string]any{
		"schemaVersion": 2,
		"mediaType":     string(types.OCIManifestSchema1),
		"artifactType":  sbomType,
		"config":        map[string]any{"mediaType": emptyType, "digest": cfgHash.String(), "size": len(emptyCfg), "data": "e30="},
		"layers":        []any{map[string]any{"mediaType": sbomType, "digest": sbomHash.String(), "size": len(sbom)}},
		"subject":       map[string]any{"mediaType": string(subject.MediaType), "digest": subject.Digest.String(), "size": subject.Size},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	h, err := blob(raw)
	if err != nil {
		return err
	}
	return lp.AppendDescriptor(v1.Descriptor{MediaType: types.OCIManifestSchema1, ArtifactType: sbomType, Digest: h, Size: int64(len(raw)),
		Annotations: map[string]string{"org.opencontainers.image.description": "CycloneDX SBOM of the kollect binary"}})
}

// rootfs is the image's one layer: the binary (also as /manager and
// /kollect-pipeline), the non-root user's passwd and group entries, its
// home and /tmp.
func rootfs(bin []byte, at time.Time) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	dirs := []struct {
		name     string
		mode     int64
		uid, gid int
	}{{"etc/", 0o755, 0, 0}, {"home/", 0o755, 0, 0}, {"home/nonroot/", 0o700, uid, uid}, {"tmp/", 0o1777, 0, 0}}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, Uid: d.uid, Gid: d.gid, ModTime: at}); err != nil {
			return nil, err
		}
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", uid, uid))},
		{"etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", uid))},
		{"kollect", 0o755, bin},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: at}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	// /manager and /kollect-pipeline are the same binary, which runs as
	// what it is invoked as: upstream's Deployments and CSVs call the
	// image's /manager with only flags, and its CI jobs run
	// /kollect-pipeline collect --config DIR.
	for _, link := range []string{"manager", "kollect-pipeline"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeLink, Name: link, Linkname: "kollect", Mode: 0o755, ModTime: at}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
