// Package e2e holds the end-to-end tests: the built manager binary, run as
// real processes against a local control plane, probing HTTP targets on
// loopback, observed through kubectl, the API and a real Prometheus.
//
// The Helm chart's tests are in e2e/chart, a Go module of its own that
// keeps the Helm SDK out of the project module.
//
// `make e2e` runs both; `make test` runs them with everything else.
package e2e
