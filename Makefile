# Kollect — build, generate, test.
#
#   make demo          the main job on a local control plane, no cluster needed
#   make test          lint + generated-code drift + every unit and envtest suite
#   make conformance   the upstream-sample suite (reads ../shared/conformance)
#   make build         bin/kollect
#   make bench         sink and engine benchmarks
#
# Everything a target needs is built from the Go module proxy and cached:
# the control plane in bin/envtest (and ~/.cache/kollect), Go builds in the
# Go build cache. PostgreSQL, which the sink tests start on loopback, comes
# from Debian's package (make test-deps installs it when missing).

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
export PATH := $(PATH):/usr/local/go/bin

GO ?= go
ENVTEST_DIR := $(CURDIR)/bin/envtest
CONFORMANCE_DIR ?= $(abspath $(CURDIR)/../shared/conformance)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
GO_TEST_FLAGS ?= -race -count=1 -timeout 20m

CONTROLLER_GEN := $(GO) -C hack/tools tool controller-gen

.PHONY: all build generate check-generated lint test test-deps conformance envtest-assets bench demo clean help

all: build

help:
	@grep -E '^#   make' Makefile | sed 's/^#   //'

build:
	$(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o bin/kollect .

## generate: deepcopy functions and the CRD manifests in deploy/crds.
generate:
	$(CONTROLLER_GEN) object paths=../../api/...
	$(CONTROLLER_GEN) crd paths=../../api/... output:crd:artifacts:config=../../deploy/crds

## check-generated: fail when generated files differ from what is committed.
check-generated: generate
	@drift="$$(git status --porcelain -- api deploy/crds)"; \
	if [ -n "$$drift" ]; then \
		echo "generated files differ from what is committed; run 'make generate' and commit:"; \
		echo "$$drift"; git --no-pager diff --stat -- api deploy/crds; exit 1; \
	fi

lint:
	@unformatted="$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) vet -tags conformance ./pipeline/conformance/

## envtest-assets: kube-apiserver and etcd for the tests (skipped when built).
envtest-assets:
	bash hack/envtest-assets.sh $(ENVTEST_DIR) etcd kube-apiserver

## test-deps: the sink test servers Go cannot build (PostgreSQL, from
## Debian's package; skipped when installed).
test-deps:
	bash hack/test-deps.sh

test: lint check-generated envtest-assets test-deps
	KUBEBUILDER_ASSETS=$(ENVTEST_DIR) $(GO) test $(GO_TEST_FLAGS) ./...

## bench: the sink and engine benchmarks (figures in docs/performance.md).
bench: test-deps
	$(GO) test -run '^$$' -bench . -benchmem -count=1 -timeout 30m ./sinks/... ./actors/... ./pipeline/extract/

conformance: envtest-assets test-deps
	@if [ ! -d "$(CONFORMANCE_DIR)/samples" ]; then \
		echo "conformance corpus not found at $(CONFORMANCE_DIR): set CONFORMANCE_DIR to the upstream corpus (a folder with samples/ and examples/)"; \
		exit 1; \
	fi
	CONFORMANCE_DIR=$(CONFORMANCE_DIR) KUBEBUILDER_ASSETS=$(ENVTEST_DIR) \
		$(GO) test -tags conformance $(GO_TEST_FLAGS) ./pipeline/conformance/...

## demo: the main job on a local control plane; DEMO_KEEP=1 keeps it running.
demo:
	bash hack/envtest-assets.sh $(ENVTEST_DIR) etcd kube-apiserver kube-controller-manager kube-scheduler kwok kubectl
	$(GO) build -o bin/kollect-demo ./hack/demo
	$(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o bin/kollect .
	KUBEBUILDER_ASSETS=$(ENVTEST_DIR) bin/kollect-demo -dir demo -assets $(ENVTEST_DIR)

clean:
	rm -rf bin
