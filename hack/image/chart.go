package main

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pushed is what helm push prints of the reference it pushed.
var pushed = regexp.MustCompile(`(?m)^Pushed: (\S+)`)

// Chart writes the packaged chart at tgz as the OCI artifact helm push
// makes of it (a Helm config and the chart's content as its one layer)
// into out/chart-oci, and returns its reference with digest. No registry
// is reachable where releases are built, so helm pushes to one run in
// this process for the purpose, and the artifact is copied out of it:
// what a registry receives from helm push, byte for byte.
func Chart(helm, tgz, out string) (string, error) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	cmd := exec.Command(helm, "push", tgz, "oci://"+host+"/charts", "--plain-http")
	cmd.Env = append(os.Environ(), "HELM_REGISTRY_CONFIG="+filepath.Join(out, ".helm-registry.json"))
	res, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("helm push: %w\n%s", err, res)
	}
	m := pushed.FindSubmatch(res)
	if m == nil {
		return "", fmt.Errorf("helm push printed no reference:\n%s", res)
	}
	ref, err := name.ParseReference(string(m[1]), name.Insecure)
	if err != nil {
		return "", err
	}
	img, err := remote.Image(ref)
	if err != nil {
		return "", fmt.Errorf("read the pushed chart back: %w", err)
	}
	dir := filepath.Join(out, "chart-oci")
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", err
	}
	repoTag := strings.TrimPrefix(ref.Context().RepositoryStr(), "charts/") + ":" + ref.Identifier()
	if err := lp.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": repoTag})); err != nil {
		return "", err
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return repoTag + "@" + d.String(), nil
}
