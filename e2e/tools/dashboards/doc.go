// Command dashboards generates the Grafana dashboards the Helm chart ships
// (charts/webchecker/files/dashboards/*.json) from Go, with the Grafana
// Foundation SDK's typed builders:
//
//   - webchecker-fleet.json: every checker at a glance, up and down (its
//     quorum state, webchecker_ready) by namespace, availability, latency
//     percentiles and phases, certificates close to expiry, checkers
//     failing from some zones, and checkers owned and probed per replica;
//   - webchecker-checker.json: one checker (namespace and name variables):
//     its quorum state (Ready), and success, latency and status code by
//     vantage point (legend: shard and zone), transitions, certificate;
//   - webchecker-operator.json: the operator's own health: scheduler lag and
//     probes in flight, status writes by result, ring members and
//     rebalances, API client errors and reconcile errors.
//
// Every panel and query reads the datasource template variable
// ${datasource}, so the dashboards work with any Prometheus datasource.
//
// `make dashboards` writes them (go run . -out <dir>); `make verify` runs
// go run . -check -out <dir>, which fails when the files differ from what
// the generator produces (a generator change whose JSON was not
// regenerated), and then git diff, which fails when they are not committed.
//
// It is a Go module of its own so that the SDK stays out of the project
// module's dependencies.
package main
