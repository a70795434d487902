#!/usr/bin/env bash
# demo.sh ENVTEST_DIR VERSION — what `make demo` runs.
#
# The first run on a new machine builds the control plane from the Go module
# proxy. To show the first export as early as it can, it builds the kollect
# CLI first and exports the examples catalogue over a folder of manifests
# into a Git repository (act zero: no cluster needed); then it builds what
# the API server needs (etcd, kube-apiserver: `make test` needs them too,
# and they reuse the Kubernetes libraries Kollect compiled), runs the story
# on the API server alone (act one), and meanwhile builds
# kube-controller-manager, kube-scheduler, kwok and kubectl in the
# background; then it tells the whole story with Running Pods (act two).
# Later runs find everything cached and tell the whole story at once.
# Each step prints one line; the build output goes to bin/demo-build.log,
# named when a step fails.
set -euo pipefail

assets="${1:?usage: demo.sh ENVTEST_DIR VERSION}"
version="${2:-dev}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p bin
STEPS_LOG="$PWD/bin/demo-build.log"
: >"$STEPS_LOG"
# shellcheck source=steps.sh
source "$here/steps.sh"

# DuckDB queries the Parquet export at the end of the story, when npm is
# here to install it.
duckdb=""
if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
	step "DuckDB's Node API, to query the Parquet export" "first time: seconds from npm; then cached" bash "$here/duckdb.sh"
	duckdb="$(bash "$here/duckdb.sh")"
fi

cluster_bins=(kube-controller-manager kube-scheduler kwok kubectl)
cached() { ENVTEST_ASSETS_CHECK=1 bash "$here/envtest-assets.sh" "$assets" "$@" 2>/dev/null; }

# Built as the control plane is (CGO_ENABLED=0, -trimpath, the same module
# versions as its wrapper module), so the Kubernetes libraries compiled here
# are reused from the build cache by kube-apiserver, and the other way round.
step "the kollect CLI" "first time: about 4 to 5 min on 2 cores; then seconds" \
	bash -c "CGO_ENABLED=0 go build -trimpath -ldflags '-X main.version=$version' -o bin/kollect ."

# Act zero: the examples catalogue over a folder of manifests, exported to
# a Git repository, before any control plane exists.
zero="$PWD/bin/demo-act-zero"
rm -rf "$zero"
mkdir -p "$zero"
git init -q --bare -b main "$zero/inventory.git"
cat >"$zero/sink.yaml" <<EOF
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: inventory, namespace: shop}
spec:
  type: git
  endpoint: file://$zero/inventory.git
  layout: {mode: perResource, content: attributes}
EOF
catalogue=()
for f in deployments-images ingress-services cert-manager-certificates argocd-applications flux-kustomizations helm-releases; do
	catalogue+=(-f "docs/examples/$f.yaml")
done
echo "==> Act zero, $(steps_elapsed) after the start: the examples' profiles over docs/examples/manifests (a folder, no cluster yet), into a Git repository"
echo "    \$ kollect collect -f docs/examples/<catalogue>.yaml --from docs/examples/manifests --sink $zero/sink.yaml"
bin/kollect collect "${catalogue[@]}" --from docs/examples/manifests --sink "$zero/sink.yaml" 2>/dev/null | sed 's/^/    /'
echo "    \$ git log --stat (the inventory repository)"
git --git-dir "$zero/inventory.git" log --reverse --format='    %h %s' --stat=100 | grep -v '^$'
echo "==> Act zero done $(steps_elapsed) after the start: the first export is in $zero/inventory.git"

if cached etcd kube-apiserver; then
	first="seconds: cached"
else
	first="first time: 5 to 9 min on 2 cores (it reuses what the CLI compiled), then cached"
fi
step "etcd and kube-apiserver" "$first" bash "$here/envtest-assets.sh" "$assets" etcd kube-apiserver
step "the demo driver" "first time: about a minute; then seconds" bash -c "CGO_ENABLED=0 go build -trimpath -o bin/kollect-demo ./hack/demo"

if cached "${cluster_bins[@]}"; then
	step "kube-controller-manager, kube-scheduler, kwok and kubectl" "cached" bash "$here/envtest-assets.sh" "$assets" "${cluster_bins[@]}"
	KUBEBUILDER_ASSETS="$assets" bin/kollect-demo -dir demo -assets "$assets" -duckdb "$duckdb"
	exit 0
fi

# First run: build the rest in the background, tell act one now.
cluster_log="$PWD/bin/demo-build-cluster.log"
bash "$here/envtest-assets.sh" "$assets" "${cluster_bins[@]}" >"$cluster_log" 2>&1 &
builder=$!
trap 'kill $builder 2>/dev/null || true' EXIT
echo "==> Meanwhile building kube-controller-manager, kube-scheduler, kwok and kubectl in the background (4 to 8 min more; $cluster_log)"
echo "==> Act one, $(steps_elapsed) after the start: the story on the API server alone (Deployments without Pods)"
KUBEBUILDER_ASSETS="$assets" bin/kollect-demo -dir bin/demo-act-one -assets "$assets" -cluster=false -keep=false -duckdb "$duckdb"
echo "==> Act one done $(steps_elapsed) after the start. Act two needs the background build; waiting for it"
if ! wait "$builder"; then
	echo "demo: building the cluster binaries failed; the build output is in $cluster_log:" >&2
	tail -n 20 "$cluster_log" >&2
	exit 1
fi
trap - EXIT
echo "==> Act two, $(steps_elapsed) after the start: the whole story, with Running Pods"
KUBEBUILDER_ASSETS="$assets" bin/kollect-demo -dir demo -assets "$assets" -duckdb "$duckdb"
echo "demo: first run done in $(steps_elapsed); later runs find everything cached"
