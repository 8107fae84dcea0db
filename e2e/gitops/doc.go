// Package gitops holds the tests of how GitOps tools judge WebCheckers
// that the built manager wrote, and the evaluators they use: kstatus
// itself (sigs.k8s.io/cli-utils, as Flux, kpt and cli-utils' apply read
// health), the health check expressions of the Flux Kustomization in
// config/gitops/flux-kustomization.yaml evaluated with cel-go as Flux's
// kustomize-controller does, and the Argo CD health Lua in
// config/gitops/argocd-cm.yaml run with gopher-lua as Argo CD does.
//
// It is a Go module of its own (github.com/networkio/webchecker/e2e/gitops,
// which replaces the project module with this checkout), so that
// cli-utils, gopher-lua and what they pull in stay out of the module graph
// of the operator and of anyone who imports its API. It uses the project's
// shared test harness, e2e/framework.
//
// `make e2e` runs these tests after the other end-to-end tests; `make test`
// runs them with everything else.
package gitops
