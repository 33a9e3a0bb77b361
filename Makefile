# tickstack build and test verbs. `make help` lists them.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

# Pinned tool versions: the module proxy refuses version listing for some modules, so never @latest.
CONTROLLER_GEN_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
HELM_VERSION ?= v3.22.0
CYCLONEDX_GOMOD_VERSION ?= v1.10.0
K8S_VERSION ?= v1.32.3

BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
HELM := $(BIN)/helm-$(HELM_VERSION)
CYCLONEDX_GOMOD := $(BIN)/cyclonedx-gomod-$(CYCLONEDX_GOMOD_VERSION)
export TICKSTACK_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tickstack
export K8S_VERSION

GO_TEST_FLAGS ?= -count=1
# Packages whose tests need the real kube-apiserver (envtest).
ENVTEST_ASSETS = $(TICKSTACK_CACHE)/envtest/$(K8S_VERSION)

.PHONY: help
help: ## Show the verbs.
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-14s %s\n",$$1,$$2}'

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs, RBAC and webhook manifests into config/ and the chart.
	$(CONTROLLER_GEN) rbac:roleName=manager crd:allowDangerousTypes=false webhook \
		paths=./api/... paths=./controllers/... paths=./internal/webhook/... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook
	$(CONTROLLER_GEN) rbac:roleName=agent paths=./internal/agent/... output:rbac:artifacts:config=config/agent
	hack/sync-chart.py
	go run ./hack/apidocs config/crd/bases docs/api-reference.md
	go run ./hack/chartdocs charts/tickstack

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: fmt
fmt: ## go fmt.
	go fmt ./...

.PHONY: vet
vet: ## go vet, the e2e-tagged packages too.
	go vet ./...
	go vet -tags e2e,release ./test/...

.PHONY: lint
lint: deps $(GOLANGCI_LINT) ## golangci-lint (.golangci.yml; the e2e-tagged packages too), the import rules of docs/architecture.md, shellcheck over every shell script, flake8 over the Python, the dataplane's C under strict warnings.
	$(GOLANGCI_LINT) run --allow-parallel-runners --build-tags e2e,scale,release ./...
	go test $(GO_TEST_FLAGS) ./test/architecture/ ./test/lint/
	hack/lint.sh shell
	hack/lint.sh python
	$(MAKE) -C dataplane lint

.PHONY: verify-gen
verify-gen: generate manifests ## Fail when generated files are not committed as generated.
	@if [ -n "$$(git status --porcelain -- api config charts/tickstack/templates charts/tickstack/README.md docs/api-reference.md)" ]; then \
		git status --porcelain -- api config charts/tickstack/templates charts/tickstack/README.md docs/api-reference.md; \
		git --no-pager diff --stat -- api config charts; \
		echo "verify-gen: generated files differ from the tree: run 'make generate manifests' and commit"; exit 1; fi

##@ Build

.PHONY: build
build: ## Build the manager, agent and tickstack CLI into bin/, stamped with release, commit and date.
	go build -ldflags "$$(hack/ldflags.sh)" -o $(BIN)/manager ./cmd/manager
	go build -ldflags "$$(hack/ldflags.sh)" -o $(BIN)/agent ./cmd/agent
	go build -ldflags "$$(hack/ldflags.sh)" -o $(BIN)/tickstack ./cmd/tickstack

.PHONY: dataplane
dataplane: ## Build the AF_XDP bypass stack, the tick-to-trade rig and the conformance program tickstack qualify runs (dataplane/build/).
	$(MAKE) -C dataplane -j2 all t2t build/conform

##@ Images, chart and release (docs/images.md, docs/releasing.md)

# Where the images and the chart go; their version (hack/version.sh: $$VERSION, the release on its tag,
# else a development version 0.2.0-dev.g<commit> that no release carries).
REGISTRY ?= localhost
VERSION ?= $(shell hack/version.sh)
override VERSION := $(VERSION)
# public: Debian bookworm-slim and golang images, everything compiled inside the build (a workstation
# with docker, podman or buildah); local: this project's machines, which reach no image registry
# (debootstrap bases, binaries built on the host: make dataplane first).
IMAGE_BASES ?= public
# more hack/images/build.sh options for make images (the e2e: --test-build)
IMAGE_FLAGS ?=
CHARTS := $(BIN)/charts
# helm speaks plain HTTP to a loopback registry, as the image push does (hack/images/build.sh)
PLAIN_HTTP = $(if $(filter 127.% localhost localhost:%,$(firstword $(subst /, ,$(REGISTRY)))),--plain-http)

.PHONY: images
images: $(if $(filter local,$(IMAGE_BASES)),dataplane) ## Build REGISTRY/tickstack-{manager,agent,bench}:VERSION with docker, podman or buildah (IMAGE_BASES=local here).
	hack/images/build.sh --registry $(REGISTRY) --version $(VERSION) --bases $(IMAGE_BASES) $(IMAGE_FLAGS) manager agent bench

.PHONY: push
push: chart ## Push the images `make images` built (printing NAME:VERSION@DIGEST, for the chart's imageDigest values) and the chart to oci://REGISTRY/charts.
	hack/images/build.sh --registry $(REGISTRY) --version $(VERSION) --bases $(IMAGE_BASES) --no-build --push manager agent bench
	$(HELM) push $(CHARTS)/tickstack-$(VERSION).tgz oci://$(REGISTRY)/charts $(PLAIN_HTTP)

.PHONY: chart
chart: $(HELM) ## Package the chart as bin/charts/tickstack-VERSION.tgz, its version and appVersion VERSION.
	@mkdir -p $(CHARTS)
	$(HELM) package charts/tickstack --version $(VERSION) --app-version $(VERSION) -d $(CHARTS)

.PHONY: release
release: $(HELM) $(CYCLONEDX_GOMOD) $(if $(filter local,$(IMAGE_BASES)),dataplane) ## Everything of release VERSION=x.y.z in bin/release/VERSION (RELEASE_DIR): chart, CLIs, image archives and digests, SBOM, SHA256SUMS.
	HELM=$(HELM) CYCLONEDX_GOMOD=$(CYCLONEDX_GOMOD) hack/release.sh --version $(VERSION) --bases $(IMAGE_BASES) \
		--out $(or $(RELEASE_DIR),$(BIN)/release/$(VERSION)) $(RELEASE_FLAGS)

##@ Main job

.PHONY: demo
demo: ## Local cluster, operator, sample profile and results.
	hack/demo.sh

##@ Test

.PHONY: deps
deps: ## Install the Debian packages the tests need (root).
	hack/install-deps.sh

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver from source and link etcd for envtest (cached).
	hack/envtest-assets.sh

.PHONY: helm
helm: $(HELM) ## Build helm at the pinned version into bin/.

.PHONY: third-party
third-party: ## Build Multus, the SR-IOV device plugin, node-feature-discovery, containerd 2 and crictl from their pinned sources (cached; docs/third-party.md).
	hack/third-party.sh >/dev/null

.PHONY: test
test: deps envtest-assets vet $(HELM) $(CYCLONEDX_GOMOD) dataplane third-party ## Run every test: Go unit, envtest, host, chart and release suites, then the dataplane's.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) TICKSTACK_HELM=$(HELM) go test $(GO_TEST_FLAGS) ./...
	go test -tags failpoint $(GO_TEST_FLAGS) ./cmd/agent/
	$(MAKE) test-release
	$(MAKE) -C dataplane test

.PHONY: test-release
test-release: $(HELM) $(CYCLONEDX_GOMOD) ## make release into a temporary folder (without the image archives), checked: sums, CLI version, chart, SBOM (docs/releasing.md).
	TICKSTACK_HELM=$(HELM) TICKSTACK_CYCLONEDX_GOMOD=$(CYCLONEDX_GOMOD) go test -tags release $(GO_TEST_FLAGS) -v -timeout 30m ./test/release/

.PHONY: e2e
e2e: deps $(HELM) dataplane third-party ## The local cluster's own test, then the whole flow on it (root): chart, profile, agent, latency pod, benchmark, restore, uninstall.
	go test -tags e2e $(GO_TEST_FLAGS) -v -timeout 40m ./test/cluster/
	go test -tags e2e $(GO_TEST_FLAGS) -v -timeout 80m ./test/e2e/ -ginkgo.v -ginkgo.label-filter='!soak'

.PHONY: soak
soak: deps $(HELM) dataplane third-party ## The operator on the local cluster for SOAK_DURATION (default 10m): profile changes, a benchmark a minute, agent restarts; fails on growth or a stuck state (root; docs/e2e.md).
	go test -tags e2e $(GO_TEST_FLAGS) -v -timeout $(or $(SOAK_TIMEOUT),90m) ./test/e2e/ -ginkgo.v -ginkgo.label-filter=soak

.PHONY: check
check: verify-gen lint test e2e ## What CI runs: generated files, lint, every test, the end-to-end test.

.PHONY: bench
bench: dataplane envtest-assets ## Benchmarks, as ratios against a baseline measured in the same run, and the agent's own cost (docs/benchmarks.md; root).
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) hack/bench.sh

.PHONY: bench-scale
bench-scale: envtest-assets ## The operator at 100, 1,000 and 5,000 kwok-simulated nodes (issue 45's design, agents resolving their own node; BENCH_SCALE_MANAGER_ARGS=--resolve-on-node=false: issue 20's): docs/bench-scale.md, .json, .svg.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) hack/bench-scale.sh

.PHONY: bench-dataplane
bench-dataplane: ## The dataplane's latency benchmark (root, 2 CPUs, ~20 minutes; BENCH_QUICK=1 ~10): docs/bench-dataplane.md, .json, .svg.
	$(MAKE) -C dataplane bench

# the build BASE is checked out and built in, outside the tree
BENCH_BASE_DIR ?= $(or $(TMPDIR),/tmp)/tickstack-bench-base
PASSES ?= 2

.PHONY: bench-dataplane-compare
bench-dataplane-compare: ## The dataplane benchmark of BASE=REVISION and of this tree, alternated PASSES times (default 2; ~10 minutes per run): ratios side by side in dataplane/build/alternate/compare.md.
	@test -n "$(BASE)" || { echo "bench-dataplane-compare: set BASE=REVISION, the build to compare against (e.g. BASE=HEAD~1)" >&2; exit 2; }
	git worktree remove --force $(BENCH_BASE_DIR) 2>/dev/null || rm -rf $(BENCH_BASE_DIR)
	git worktree prune
	git worktree add --detach $(BENCH_BASE_DIR) $(BASE)
	$(MAKE) -C $(BENCH_BASE_DIR)/dataplane all
	$(MAKE) -C dataplane all
	dataplane/bench/alternate.sh $(PASSES) $(BENCH_BASE_DIR)/dataplane dataplane

.PHONY: clean
clean: ## Remove build outputs.
	rm -rf $(BIN)

$(CONTROLLER_GEN):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/controller-gen $@

$(GOLANGCI_LINT):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@

# go install builds it at the pinned version (the module proxy serves its source).
$(CYCLONEDX_GOMOD):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_GOMOD_VERSION)
	mv $(BIN)/cyclonedx-gomod $@

$(HELM):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(BIN)/helm $@
