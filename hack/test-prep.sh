#!/usr/bin/env bash
# test-prep.sh ENVTEST_DIR HELM — what `make test` needs before it compiles
# a test, one line per step (what it builds, roughly how long on 2 cores);
# the module downloads and build output go to bin/test-build.log, named
# when a step fails. Later runs find everything cached and take seconds.
set -euo pipefail
assets="${1:?usage: test-prep.sh ENVTEST_DIR HELM}"
helm="${2:?usage: test-prep.sh ENVTEST_DIR HELM}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p bin
STEPS_LOG="$PWD/bin/test-build.log"
: >"$STEPS_LOG"
# shellcheck source=steps.sh
source "$here/steps.sh"

cached() { ENVTEST_ASSETS_CHECK=1 bash "$here/envtest-assets.sh" "$assets" etcd kube-apiserver 2>/dev/null; }
if cached; then est="cached"; else est="first time: about 6 min on 2 cores, then cached"; fi
step "etcd and kube-apiserver, the control plane the tests run" "$est" bash "$here/envtest-assets.sh" "$assets" etcd kube-apiserver

step "PostgreSQL, Prometheus (Debian) and Azurite (npm): the test servers Go cannot build" "first time: about 1 to 2 min; then seconds" \
	bash "$here/test-deps.sh"

step "helm, for the chart's tests and make generate" "first time: about 3 min on 2 cores; then seconds" bash "$here/helm.sh" "$helm"

step "the Go modules of the operator, the load-test harness, the code generators and the image builder" \
	"first time: about 10 s; then none" \
	bash -c 'go mod download && go -C loadtest mod download && go -C hack/tools mod download && go -C hack/image mod download'
