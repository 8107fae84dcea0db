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
HELM_VERSION ?= v3.22.0

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

##@ Tools (built once, cached under bin/)

.PHONY: tools
tools: $(KUBE_STAMP) $(ETCD_STAMP) $(CONTROLLER_GEN_STAMP) $(HELM_STAMP) ## Build every pinned tool.

$(KUBE_STAMP): e2e/tools/kubernetes/go.mod e2e/tools/kubernetes/go.sum
	@mkdir -p $(K8S_BIN)
	@echo ">> building kube-apiserver and kubectl $(K8S_VERSION) from Go modules (first time: ~4 min)"
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
