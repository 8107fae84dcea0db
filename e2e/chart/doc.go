// Package chart holds the Helm chart's tests and the Helm SDK calls they
// make: rendering the chart as `helm template` does, against its values
// schema; linting it as `helm lint --strict` does; drift of its CRD and RBAC
// rules against what controller-gen generates into config/; its
// PrometheusRule checked with promtool (check rules, and unit tests of every
// alert and recording rule); every PromQL expression of its rules and
// Grafana dashboards run against a real Prometheus scraping manager
// replicas; and a real `helm install`,
// `upgrade` and `uninstall` into a local control plane, whose Deployment
// arguments and ServiceAccount then run the built manager as processes.
//
// It is a Go module of its own (github.com/networkio/webchecker/e2e/chart,
// which replaces the project module with this checkout), so that Helm and
// what it pulls in (oras, cli-runtime, sql-migrate, ...) stay out of the
// module graph of the operator and of anyone who imports its API. It uses
// the project's shared test harness, e2e/framework.
//
// `make e2e` runs these tests after the other end-to-end tests; `make test`
// runs them with everything else.
package chart
