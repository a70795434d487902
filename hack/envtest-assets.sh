#!/usr/bin/env bash
# envtest-assets.sh DIR [BINARY...]
#
# Builds the control-plane binaries the tests and the demo run (kube-apiserver
# and etcd by default; kube-controller-manager, kube-scheduler, kwok and
# kubectl on request) from the Go module proxy into DIR. Each binary is built once into a
# per-user cache keyed by the wrapper modules' content, so a fresh clone on the
# same machine copies it instead of rebuilding (a cold kube-apiserver build
# takes about 15 minutes on 2 cores).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${1:?usage: envtest-assets.sh DIR [BINARY...]}"
shift
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=(etcd kube-apiserver)

k8s_version=v1.37.2
kwok_version=v0.8.0

# The cache key covers what the binaries are built from, not this script.
key="$(cat "$here/envtest/k8s/go.mod" "$here/envtest/k8s/go.sum" \
	"$here/envtest/etcd/go.mod" "$here/envtest/etcd/go.sum" | sha256sum | cut -c1-16)-$kwok_version"
cache="${KOLLECT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kollect}/envtest-$key"
mkdir -p "$dest" "$cache"
base_cache="$cache"

ldflags_k8s="-s -w \
 -X k8s.io/component-base/version.gitVersion=$k8s_version \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=37 \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z \
 -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version \
 -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=37"

build() {
	local bin="$1" out="$cache/$1.tmp"
	echo "envtest-assets: building $bin (cached in $cache)" >&2
	case "$bin" in
	kube-apiserver | kube-controller-manager | kube-scheduler)
		(cd "$here/envtest/k8s" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags_k8s" \
			-o "$out" "k8s.io/kubernetes/cmd/$bin") ;;
	etcd)
		(cd "$here/envtest/etcd" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" \
			-o "$out" go.etcd.io/etcd/server/v3) ;;
	kubectl)
		(cd "$here/envtest/kubectl" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags_k8s" -o "$out" .) ;;
	kwok)
		GOBIN="$cache/gobin" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
			"sigs.k8s.io/kwok/cmd/kwok@$kwok_version"
		mv "$cache/gobin/kwok" "$out" ;;
	*)
		echo "envtest-assets: unknown binary $bin" >&2; exit 2 ;;
	esac
	mv "$out" "$cache/$bin"
}

# kubectl has a wrapper module of its own and so a cache key of its own:
# changing it never rebuilds the control plane.
kubectl_cache="${KOLLECT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kollect}/kubectl-$(cat "$here/envtest/kubectl/go.mod" \
	"$here/envtest/kubectl/go.sum" "$here/envtest/kubectl/main.go" | sha256sum | cut -c1-16)"

for bin in "${bins[@]}"; do
	cache="$base_cache"
	if [ "$bin" = kubectl ]; then
		cache="$kubectl_cache"
		mkdir -p "$cache"
	fi
	if [ -n "${ENVTEST_ASSETS_CHECK:-}" ]; then
		# Only say whether a build is needed (exit 1 when one is).
		[ -x "$cache/$bin" ] || exit 1
		continue
	fi
	if [ -x "$dest/$bin" ] && cmp -s "$dest/$bin" "$cache/$bin" 2>/dev/null; then
		continue
	fi
	[ -x "$cache/$bin" ] || build "$bin"
	cp "$cache/$bin" "$dest/$bin.tmp" && mv "$dest/$bin.tmp" "$dest/$bin"
	echo "envtest-assets: $dest/$bin ready" >&2
done
