# webchecker Makefile. `make help` lists the targets.
#
# Every tool the tests and the demo need (a real kube-apiserver and etcd,
# kubectl, controller-gen, helm) is built from the Go module proxy, pinned,
# and cached under bin/ (git-ignored). The first build takes a few minutes;
# later runs reuse bin/.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ROOT := $(abspath .)
BIN := $(ROOT)/bin
K8S_BIN := $(BIN)/k8s

K8S_VERSION ?= v1.37.2
K8S_MINOR := 37
ETCD_VERSION ?= v3.7.3
CONTROLLER_GEN_VERSION ?= v0.23.0
# The helm binary for lint-chart; keep it at the Helm SDK version the chart
# tests use (helm.sh/helm/v3 in e2e/chart/go.mod).
HELM_VERSION ?= v3.22.0
CHART := $(ROOT)/charts/webchecker
# The release version is the chart's appVersion: image tag, chart and
# binary move together.
VERSION := $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' $(CHART)/Chart.yaml)
IMG ?= webchecker:$(VERSION)
# The commit, and the flags that put both into webchecker_build_info.
REVISION := $(shell git rev-parse HEAD 2>/dev/null)
MANAGER_LDFLAGS := -X main.version=$(VERSION) -X main.revision=$(REVISION)
# grpcnotrace leaves out grpc-go's debug tracing (golang.org/x/net/trace), whose
# html/template keeps the linker from dropping unused methods: 65 MB
# binary without it, 51 MB with it (the probes do not use it).
MANAGER_TAGS := grpcnotrace

KUBE_APISERVER := $(K8S_BIN)/kube-apiserver
ETCD := $(K8S_BIN)/etcd
KUBECTL := $(K8S_BIN)/kubectl
CONTROLLER_GEN := $(BIN)/controller-gen
HELM := $(BIN)/helm

# Stamp files carry the pinned version in their name: changing a version
# rebuilds exactly the tool it belongs to.
KUBE_STAMP := $(K8S_BIN)/.kubernetes-$(K8S_VERSION)
ETCD_STAMP := $(K8S_BIN)/.etcd-$(ETCD_VERSION)
CONTROLLER_GEN_STAMP := $(BIN)/.controller-gen-$(CONTROLLER_GEN_VERSION)
HELM_STAMP := $(BIN)/.helm-$(HELM_VERSION)

K8S_LDFLAGS := -s -w $(foreach p,k8s.io/client-go/pkg/version k8s.io/component-base/version,\
	-X $(p).gitVersion=$(K8S_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=$(K8S_MINOR) -X $(p).gitTreeState=clean)
HELM_LDFLAGS := -s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$(K8S_MINOR) \
	-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$(K8S_MINOR)

GO_TEST_FLAGS ?= -race -count=1
# The Helm chart's tests are a Go module of their own, so that Helm stays out
# of the project module's dependencies (and so out of the manager, the demo
# and anyone importing the API). test, e2e and verify run them after the
# project module's, with the same flags and environment.
CHART_TESTS := e2e/chart
# How GitOps tools (kstatus, Flux's CEL, Argo CD's Lua) judge WebCheckers:
# a module of its own too, so that cli-utils and gopher-lua stay out.
GITOPS_TESTS := e2e/gitops
# The chart's Grafana dashboards are generated from Go (Grafana Foundation
# SDK) by a module of its own, so the SDK stays out of the project module.
DASHBOARDS := e2e/tools/dashboards
# The end-to-end tests run the manager built by `make build`.
E2E_TEST = WEBCHECKER_MANAGER=$(BIN)/manager go test $(GO_TEST_FLAGS) -timeout 15m
# go vet builds with the tests' instrumentation, so that the packages it
# compiles are the ones the tests reuse: on an empty build cache (CI on a
# fresh machine) everything is compiled once, not twice.
VET_FLAGS ?= -race
# Every test talks to the control plane built above.
export KUBEBUILDER_ASSETS := $(K8S_BIN)

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Run

.PHONY: demo
demo: $(KUBE_STAMP) $(ETCD_STAMP) build ## Run a local demo: control plane, sample targets, the manager, and a live `kubectl get webcheckers`.
	go build -o $(BIN)/demo ./e2e/demo
	$(BIN)/demo --bin-dir $(BIN)

.PHONY: run
run: manifests build ## Run the manager against the cluster in $KUBECONFIG (install the CRD first: make install).
	$(BIN)/manager $(RUN_ARGS)

.PHONY: install
install: manifests $(KUBE_STAMP) ## Install the CRD into the cluster in $KUBECONFIG.
	$(KUBECTL) apply --server-side -f config/crd/bases

##@ Build

.PHONY: build
build: ## Build the manager binary into bin/manager.
	go build -trimpath -tags '$(MANAGER_TAGS)' -ldflags='$(MANAGER_LDFLAGS)' -o $(BIN)/manager ./cmd/manager

.PHONY: generate
generate: $(CONTROLLER_GEN_STAMP) ## Generate deepcopy code.
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN_STAMP) ## Generate the CRD and RBAC manifests under config/ and copy the CRD into the chart.
	$(CONTROLLER_GEN) crd rbac:roleName=webchecker-manager paths=./api/... paths=./cmd/... paths=./controllers/... paths=./sharding/... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	rm -f $(CHART)/files/crds/*.yaml && cp config/crd/bases/*.yaml $(CHART)/files/crds/

.PHONY: dashboards
dashboards: ## Generate the chart's Grafana dashboards (charts/webchecker/files/dashboards) from Go.
	cd $(DASHBOARDS) && go run . -out $(CHART)/files/dashboards

.PHONY: tidy
tidy: ## Tidy go.mod and go.sum of the project module, the chart tests' and GitOps tests' modules and the dashboards generator's.
	go mod tidy
	cd $(CHART_TESTS) && go mod tidy
	cd $(GITOPS_TESTS) && go mod tidy
	cd $(DASHBOARDS) && go mod tidy

.PHONY: docker-build
docker-build: ## Build the container image $(IMG) (needs a Docker engine).
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(IMG) .

.PHONY: lint-chart
lint-chart: $(HELM_STAMP) ## Lint the Helm chart (strict).
	$(HELM) lint --strict $(CHART)

##@ Test

.PHONY: test
test: $(KUBE_STAMP) $(ETCD_STAMP) debian-tools generate manifests build ## Run every test: unit, envtest integration, e2e, then the chart's (its own module; they lint it with the Helm SDK) and the GitOps tools' (their own module).
	go test $(GO_TEST_FLAGS) -timeout 20m $$(go list ./... | grep -v /e2e)
	$(E2E_TEST) ./e2e/...
	cd $(CHART_TESTS) && $(E2E_TEST) ./...
	cd $(GITOPS_TESTS) && $(E2E_TEST) ./...

.PHONY: unit
unit: ## Run only the tests that need no control plane (-short skips those of cmd/manager that do).
	go test $(GO_TEST_FLAGS) -short ./probing/... ./sharding/ring/... ./cmd/...

.PHONY: e2e
e2e: $(KUBE_STAMP) $(ETCD_STAMP) debian-tools build ## Run only the end-to-end tests (the built manager against a local control plane), the chart's and the GitOps tools' included.
	$(E2E_TEST) -v ./e2e/...
	cd $(CHART_TESTS) && $(E2E_TEST) -v ./...
	cd $(GITOPS_TESTS) && $(E2E_TEST) -v ./...

# make bench writes its figures (JSON) here; each bench prints its table.
BENCH_OUT := $(BIN)/bench

.PHONY: bench
bench: $(KUBE_STAMP) $(ETCD_STAMP) debian-tools build ## Run the benchmarks (not part of make test, which runs them at a tiny size): the engine beside the blackbox exporter and wrk (~2.5 min); 3 managers on the local control plane at 1k/3k checkers answering at once (~3 min), at 10k with the realistic profile and its failure sequence (~8 min); then bench-100k. Tables on stdout, JSON under bin/bench/.
	go run ./e2e/bench/engine --out $(BENCH_OUT)
	go run ./e2e/bench/controlplane --manager $(BIN)/manager --out $(BENCH_OUT) --profile instant --sizes 1000,3000
	go run ./e2e/bench/controlplane --manager $(BIN)/manager --out $(BENCH_OUT) --profile realistic --sizes 10000
	$(MAKE) --no-print-directory bench-100k

.PHONY: bench-100k
bench-100k: $(KUBE_STAMP) $(ETCD_STAMP) build ## Run the issue's size alone: 100,000 realistic checkers on 10 replicas, interval 60s (~35 min on 2 CPUs: 18 of them creating; see e2e/bench/README.md). JSON in bin/bench/controlplane-realistic-10x1m0s.json.
	go run ./e2e/bench/controlplane --manager $(BIN)/manager --out $(BENCH_OUT) --profile realistic --sizes 100000 --replicas 10 --interval 60s --converge-within 10m

.PHONY: bench-go
bench-go: ## Run the Go micro-benchmarks (go test -bench) of every package.
	go test -run '^$$' -bench . -benchmem ./...

.PHONY: verify
verify: generate manifests ## Check formatting, vet, tidy go.mod files, and that generated files are up to date.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	go vet $(VET_FLAGS) ./...
	cd $(CHART_TESTS) && go vet $(VET_FLAGS) ./...
	cd $(GITOPS_TESTS) && go vet $(VET_FLAGS) ./...
	@go mod tidy -diff && (cd $(CHART_TESTS) && go mod tidy -diff) && (cd $(GITOPS_TESTS) && go mod tidy -diff) || { echo "go.mod or go.sum is not tidy: run make tidy and commit"; exit 1; }
	cd $(DASHBOARDS) && go vet ./... && go mod tidy -diff && go test -count=1 ./... && go run . -check -out $(CHART)/files/dashboards
	@git diff --exit-code -- api config $(CHART)/files || { echo "generated files are out of date: run make generate manifests dashboards and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- api config $(CHART)/files)" || { echo "untracked generated files:"; git status --porcelain -- api config $(CHART)/files; exit 1; }

.PHONY: clean
clean: ## Remove built binaries (keeps the cached tools).
	rm -f $(BIN)/manager

##@ Tools (built once, cached under bin/)

.PHONY: tools
tools: $(KUBE_STAMP) $(ETCD_STAMP) $(CONTROLLER_GEN_STAMP) $(HELM_STAMP) ## Build every pinned tool.

# Tools the tests and benchmarks run that Go modules cannot build (C
# programs, or the reference tool as users install it): Debian's packages,
# installed when missing (as root, or through sudo). Each entry is
# command:package.
DEBIAN_TOOLS := prometheus:prometheus promtool:prometheus \
	prometheus-blackbox-exporter:prometheus-blackbox-exporter wrk:wrk

# The metrics e2e test runs a real Prometheus server and promtool; the
# benchmarks (and their smoke runs in make test) compare with Debian's
# blackbox exporter and wrk.
.PHONY: debian-tools
debian-tools: ## Install the Debian packages the tests and benchmarks need (prometheus, promtool, blackbox exporter, wrk) if missing.
	@missing=; for entry in $(DEBIAN_TOOLS); do \
		command -v "$${entry%%:*}" >/dev/null || missing="$$missing $${entry#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo ">> installing Debian packages:$$missing"; \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(KUBE_STAMP): e2e/tools/kubernetes/go.mod e2e/tools/kubernetes/go.sum
	@mkdir -p $(K8S_BIN)
	@echo ">> building kube-apiserver and kubectl $(K8S_VERSION) from Go modules (first time: ~10 min on 2 cores)"
	cd e2e/tools/kubernetes && go build -trimpath -ldflags='$(K8S_LDFLAGS)' -o $(KUBE_APISERVER) k8s.io/kubernetes/cmd/kube-apiserver
	cd e2e/tools/kubernetes && go build -trimpath -ldflags='$(K8S_LDFLAGS)' -o $(KUBECTL) k8s.io/kubernetes/cmd/kubectl
	@rm -f $(K8S_BIN)/.kubernetes-* && touch $@

$(ETCD_STAMP): e2e/tools/etcd/go.mod e2e/tools/etcd/go.sum
	@mkdir -p $(K8S_BIN)
	@echo ">> building etcd $(ETCD_VERSION) from Go modules"
	cd e2e/tools/etcd && go build -trimpath -ldflags='-s -w' -o $(ETCD) go.etcd.io/etcd/server/v3
	@rm -f $(K8S_BIN)/.etcd-* && touch $@

$(CONTROLLER_GEN_STAMP):
	@mkdir -p $(BIN)
	@echo ">> building controller-gen $(CONTROLLER_GEN_VERSION)"
	GOBIN=$(BIN) GOFLAGS= go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	@rm -f $(BIN)/.controller-gen-* && touch $@

$(HELM_STAMP):
	@mkdir -p $(BIN)
	@echo ">> building helm $(HELM_VERSION)"
	GOBIN=$(BIN) GOFLAGS= go install -trimpath -ldflags='$(HELM_LDFLAGS)' helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	@rm -f $(BIN)/.helm-* && touch $@
