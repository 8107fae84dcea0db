// Package framework is the test harness shared by the integration tests,
// the end-to-end tests (those of the Helm chart, in their own module
// e2e/chart, too) and the local demo: a real control plane (kube-apiserver
// and etcd built by the Makefile, started through envtest) with the
// project's CRDs installed (or none, for the chart to install), kubectl as
// its admin or as another user, manager processes run from the built
// binary, a loopback DNS stub for them, and a recorder of every watch event on the WebCheckers
// (their status writes); a real Prometheus server scraping a fleet of
// manager replicas (StartFleet), and a check that a PromQL expression names
// only metrics that have series (CheckExpression).
//
// The HTTP targets the tests probe are probetest.Target (package
// probing/probetest), with the other test servers.
//
// It needs no Helm: the chart's tests keep the Helm SDK in their own module,
// so neither the demo nor the project module depends on it.
//
// Nothing here sends traffic beyond the loopback interface.
package framework
