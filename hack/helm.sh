#!/usr/bin/env bash
# helm.sh DEST: builds the helm CLI from the Go module proxy into DEST (a
# file path), once per version, cached per user like the control plane.
set -euo pipefail
dest="${1:?usage: helm.sh DEST}"
version=v4.3.2
cache="${KOLLECT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kollect}/helm-$version"
if [ -x "$dest" ] && cmp -s "$dest" "$cache/helm" 2>/dev/null; then
	exit 0
fi
if [ ! -x "$cache/helm" ]; then
	echo "helm.sh: building helm $version (cached in $cache)" >&2
	mkdir -p "$cache"
	GOBIN="$cache" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
		"helm.sh/helm/v4/cmd/helm@$version"
fi
mkdir -p "$(dirname "$dest")"
cp "$cache/helm" "$dest.tmp" && mv "$dest.tmp" "$dest"
