// Package e2e holds the end-to-end tests: the built manager binary, run as
// real processes against a local control plane, probing HTTP targets on
// loopback, observed through kubectl, the API and a real Prometheus.
//
// Its rooms:
//
//   - e2e (this package): the tests, one file per promise (sharding,
//     quorum, metrics, RBAC, egress, hostile tenants, ...), with the
//     harnesses they share in *_harness_test.go;
//   - e2e/framework: the harness every integration test shares (the local
//     control plane, managers run as processes, kubectl, Prometheus);
//   - e2e/chart: the Helm chart's tests, a Go module of its own that keeps
//     the Helm SDK out of the project module;
//   - e2e/bench: `make bench`, the engine beside the blackbox exporter and
//     wrk (bench/engine) and managers on the local control plane
//     (bench/controlplane), with what they share (bench/procstat,
//     bench/report); its README holds the figures;
//   - e2e/demo: `make demo`, webchecker on a machine with no cluster;
//   - e2e/tools: what the Makefile builds from Go modules (kube-apiserver,
//     kubectl and etcd, each a module of its own) and the generator of the
//     chart's Grafana dashboards.
//
// `make e2e` runs the tests and the chart's; `make test` runs them with
// everything else.
package e2e
