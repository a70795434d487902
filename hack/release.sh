#!/usr/bin/env bash
# release.sh OUT VERSION — the release artifacts of VERSION in OUT:
#   kollect-VERSION-linux-ARCH           static binaries (RELEASE_ARCHES,
#                                        default "amd64 arm64")
#   kollect-VERSION-linux-ARCH.cdx.json  a CycloneDX SBOM of each binary
#                                        (cyclonedx-gomod, hack/tools)
#   kollect-CHART.tgz                    the Helm chart, appVersion VERSION
#   install.yaml                         the chart rendered for kubectl apply
#   image/oci, image.ref                 the image index (one image per
#                                        arch, each with its SBOM attached
#                                        as an OCI referrer) as an OCI
#                                        layout, and its reference@digest
#   chart-oci, chart.ref                 the chart as the OCI artifact helm
#                                        push makes, and its reference@digest
#   kollect-VERSION-olm-bundle.tar.gz    an OLM bundle (registry+v1: the CSV,
#                                        the CRDs, metadata/annotations.yaml)
#   SHA256SUMS, SHA256SUMS.sig           checksums of the files above (the
#                                        .ref files pin the layouts' digests), and
#                                        their signature with the OpenSSH key
#                                        in RELEASE_SIGNING_KEY (ssh-keygen -Y
#                                        sign, namespace kollect-release)
# A user verifies a release with ssh-keygen -Y verify and sha256sum -c
# (README, "Verifying a release").
set -euo pipefail
out="${1:?usage: release.sh OUT VERSION}"
version="${2:?usage: release.sh OUT VERSION}"
arches="${RELEASE_ARCHES:-amd64 arm64}"
helm="${HELM:-bin/helm}"
key="${RELEASE_SIGNING_KEY:-}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"

if [ -z "$key" ] || [ ! -f "$key" ]; then
	echo "release: RELEASE_SIGNING_KEY must name an OpenSSH private key file (ssh-keygen -t ed25519 -f kollect-release)" >&2
	exit 1
fi
command -v ssh-keygen >/dev/null || { echo "release: ssh-keygen is missing (Debian: openssh-client; make test-deps installs it)" >&2; exit 1; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -rf "$out"/bundle "$out"/kollect-* "$out"/install.yaml "$out"/SHA256SUMS "$out"/SHA256SUMS.sig "$out"/image "$out"/image.ref "$out"/chart-oci "$out"/chart.ref

# A chart version must be SemVer: a tag v1.2.3 gives 1.2.3, anything else
# (a commit) 0.0.0-<it>.
chart_version="${version#v}"
if ! [[ "$chart_version" =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]]; then
	chart_version="0.0.0-$(echo "$version" | tr -c 'A-Za-z0-9.\n-' '-')"
fi

cd "$root"
platforms=()
for arch in $arches; do
	bin="$out/kollect-$version-linux-$arch"
	echo "release: building $bin" >&2
	CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$bin" .
	go -C hack/tools tool cyclonedx-gomod bin -json -version "$version" -output "$bin.cdx.json" "$bin"
	platforms+=(-platform "$arch=$bin,$bin.cdx.json")
done
# The image index and its SBOM referrers, from the same binaries.
go -C hack/image run . "${platforms[@]}" -repository "${IMAGE_REPOSITORY:-ghcr.io/kollect-dev/kollect}" -version "$version" \
	-revision "$(git rev-parse HEAD 2>/dev/null || true)" -out "$out/image" | sed -n 's/^image //p' >"$out/image.ref"
rm -f "$out/image/kollect.tar" # docker load takes one platform: make image writes it

"$helm" package deploy/helm/kollect --version "$chart_version" --app-version "$version" -d "$out" >/dev/null
go -C hack/image run . -chart "$out/kollect-$chart_version.tgz" -helm "$(cd "$(dirname "$helm")" && pwd)/$(basename "$helm")" -out "$out" | sed -n 's/^chart //p' >"$out/chart.ref"
# The OLM bundle, from the chart rendered for this version's image.
rendered="$(mktemp)"
"$helm" template kollect deploy/helm/kollect --namespace kollect-system --include-crds --set "image.tag=$version" >"$rendered"
go -C hack/image run . -bundle "$rendered" -version "$version" -image "${IMAGE_REPOSITORY:-ghcr.io/kollect-dev/kollect}:$version" -out "$out" >/dev/null
rm -f "$rendered"
tar -C "$out" -czf "$out/kollect-$version-olm-bundle.tar.gz" bundle
rm -rf "$out/bundle"
{
	echo "# Kollect $version: kubectl apply --server-side -f install.yaml"
	printf -- "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: kollect-system\n"
	"$helm" template kollect deploy/helm/kollect --namespace kollect-system --include-crds --set "image.tag=$version"
} >"$out/install.yaml"

cd "$out"
sha256sum kollect-* install.yaml image.ref chart.ref >SHA256SUMS
ssh-keygen -q -Y sign -f "$key" -n kollect-release SHA256SUMS
echo "release: $(wc -l <SHA256SUMS) artifacts in $out, checksums signed (SHA256SUMS.sig)" >&2
