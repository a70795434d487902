// Command image assembles Kollect's container image without Docker: the
// static kollect binary on an empty base, with the passwd and group
// entries of a non-root user (UID/GID 65532, as distroless "nonroot") and
// no shell. Trusted CA roots are compiled into the binary (the fallback
// bundle from golang.org/x/crypto/x509roots), so the image needs no CA
// file. It writes an OCI image layout and a tarball that docker load,
// crane push and skopeo accept.
//
//	go run . -binary ../../bin/image/kollect -version v0.1.0 -out ../../bin/image
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Options say what to build.
type Options struct {
	Binary     string // the static linux kollect binary
	Repository string // the name it is pushed as (the chart's default image)
	Version    string
	Revision   string // the source commit
	Source     string // the source repository URL
	Arch       string // amd64, arm64
	Out        string // folder for oci/ and kollect.tar
	// Created is the image's creation time; zero uses the epoch, so the
	// same binary gives the same image digest.
	Created time.Time
}

const uid = 65532

func main() {
	var o Options
	flag.StringVar(&o.Binary, "binary", "", "The static linux kollect binary.")
	flag.StringVar(&o.Repository, "repository", "ghcr.io/kollect-dev/kollect", "The repository the image is pushed to.")
	flag.StringVar(&o.Version, "version", "dev", "The version (also the tag).")
	flag.StringVar(&o.Revision, "revision", "", "The source commit.")
	flag.StringVar(&o.Source, "source", "https://github.com/kollect-dev/kollect", "The source repository.")
	flag.StringVar(&o.Arch, "arch", "amd64", "The architecture of the binary.")
	flag.StringVar(&o.Out, "out", "bin/image", "Output folder.")
	flag.Parse()
	ref, err := Build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("image %s\n  OCI layout: %s\n  tarball:    %s (docker load -i, crane push, skopeo copy docker-archive:)\n",
		ref, filepath.Join(o.Out, "oci"), filepath.Join(o.Out, "kollect.tar"))
}

// Build writes the image and returns its reference with digest.
func Build(o Options) (string, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return "", err
	}
	fs, err := rootfs(bin, o.Created)
	if err != nil {
		return "", err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(fs)), nil })
	if err != nil {
		return "", err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return "", err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	cfg := cf.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", o.Arch
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
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return "", err
	}
	tag, err := name.NewTag(o.Repository + ":" + o.Version)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return "", err
	}
	oci := filepath.Join(o.Out, "oci")
	if err := os.RemoveAll(oci); err != nil {
		return "", err
	}
	p, err := layout.Write(oci, empty.Index)
	if err != nil {
		return "", err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag.String()})); err != nil {
		return "", err
	}
	if err := tarball.WriteToFile(filepath.Join(o.Out, "kollect.tar"), tag, img); err != nil {
		return "", err
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return tag.String() + "@" + d.String(), nil
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
