package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// fleetSelector selects the checkers of the namespaces picked in the
// dashboard's namespace variable.
const fleetSelector = `namespace=~"$namespace"`

// Up and down are the quorum state, webchecker_ready (the checkers' Ready
// condition), which the owner alone exports: one series per checker, two
// for a moment when it moves, hence max by checker. The probe series come
// from every vantage point of a checker (labels shard and zone), and are
// aggregated by checker wherever a panel lists checkers.

// inMaintenance selects the checkers (of the dashboard's namespaces) in a
// maintenance window, as the chart's rules leave them out.
const inMaintenance = `(max by (namespace, name) (webchecker_maintenance{` + fleetSelector + `}) == 1)`

// dependencyDown selects the checkers (of the dashboard's namespaces) that
// fail while a checker they depend on is down (Ready reason
// DependencyDown), as the chart's alerts leave them out.
const dependencyDown = `(max by (namespace, name) (webchecker_dependency_down{` + fleetSelector + `}) == 1)`

// fleet is the overview of every checker: how many are up and down in each
// namespace, availability, latency, certificates close to expiry, checkers
// failing from some zones, and how the checkers are spread over the
// replicas.
func fleet() *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder("WebChecker / Fleet").
		Uid("webchecker-fleet").
		Description("Every WebChecker at a glance: up and down (Ready) by namespace, availability, latency, certificates, failing zones, checkers per replica.").
		Tags([]string{"webchecker"}).
		Refresh("30s").
		Time("now-6h", "now").
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(datasourceVariable()).
		WithVariable(labelVariable("namespace", "namespace", "webchecker_probe_success", true)).
		WithRow(dashboard.NewRowBuilder("Checkers")).
		WithPanel(statPanel("Checkers up", "Checkers whose Ready condition is True: their probes succeed (with several vantage points, at a majority of them).", unitShort,
			q{expr: `count(max by (namespace, name) (webchecker_ready{` + fleetSelector + `}) == 1) or vector(0)`}, thresholds("green"))).
		WithPanel(statPanel("Checkers down", "Checkers whose Ready condition is False: their probes fail (with several vantage points, at a majority of them), outside a maintenance window, while no checker they depend on is down; WebCheckerDown fires when that lasts.", unitShort,
			q{expr: `count((max by (namespace, name) (webchecker_ready{` + fleetSelector + `}) == 0) unless on (namespace, name) (` + inMaintenance + ` or ` + dependencyDown + `)) or vector(0)`}, thresholds("green", step{1, "red"}))).
		WithPanel(statPanel("Down with a dependency", "Checkers that fail while a checker they depend on (spec.dependsOn) is down: Ready reason DependencyDown. They do not page; their dependency does.", unitShort,
			q{expr: `count(` + dependencyDown + ` unless on (namespace, name) ` + inMaintenance + `) or vector(0)`}, thresholds("green", step{1, "orange"}))).
		WithPanel(statPanel("In maintenance", "Checkers in one of their maintenance windows (Maintenance condition True): probed as usual, left out of the alerts and error budgets.", unitShort,
			q{expr: `count(` + inMaintenance + `) or vector(0)`}, thresholds("green", step{1, "blue"}))).
		WithPanel(statPanel("Availability", "Successful probes among all probes, of every vantage point, over the dashboard's time range.", unitRatio,
			q{expr: `sum(increase(webchecker_probes_total{` + fleetSelector + `,result="success"}[$__range])) / sum(increase(webchecker_probes_total{` + fleetSelector + `}[$__range]))`},
			thresholds("red", step{0.99, "orange"}, step{0.999, "green"})).Decimals(3)).
		WithPanel(timeseriesPanel("Checkers up and down by namespace", "Checkers by their Ready condition (the quorum state): True up, False down.", unitShort,
			q{`count by (namespace) (max by (namespace, name) (webchecker_ready{` + fleetSelector + `}) == 1)`, "{{namespace}} up"},
			q{`count by (namespace) (max by (namespace, name) (webchecker_ready{` + fleetSelector + `}) == 0)`, "{{namespace}} down"})).
		WithPanel(timeseriesPanel("Availability by namespace", "Successful probes among all probes of the namespace's checkers.", unitRatio,
			q{`sum by (namespace) (rate(webchecker_probes_total{` + fleetSelector + `,result="success"}[$__rate_interval])) / sum by (namespace) (rate(webchecker_probes_total{` + fleetSelector + `}[$__rate_interval]))`, "{{namespace}}"}).
			Max(1)).
		WithPanel(tablePanel("Checkers down", "Checkers whose Ready condition is False, with the highest status code their vantage points got; the checker dashboard shows one in detail.", unitShort,
			q{expr: `max by (namespace, name) (webchecker_probe_http_status_code{` + fleetSelector + `}) and on (namespace, name) (max by (namespace, name) (webchecker_ready{` + fleetSelector + `}) == 0)`})).
		WithPanel(tablePanel("Failing addresses", "Addresses whose latest probe failed, of checkers that probe every address of their host name (spec.addresses Any, All or Majority), whether or not the checker's mode lets it stay Ready: a dead address behind a live name. The value is how many vantage points saw it fail.", unitShort,
			q{expr: `count by (namespace, name, address) (webchecker_probe_address_success{` + fleetSelector + `} == 0)`})).
		WithPanel(tablePanel("Failing zones", "Checkers failing from at least one zone, and from how many: zones where every vantage point of the checker failed its latest probe, whether or not the quorum holds (WebCheckerDownFromZones, when enabled, fires from its zones). Vantage points without a known zone count as one zone.", unitShort,
			q{expr: `sort_desc(count by (namespace, name) (max by (namespace, name, zone) (webchecker_probe_success{` + fleetSelector + `}) == 0))`})).
		WithPanel(tablePanel("Slowest checkers", "The ten checkers whose latest probe took longest, at their slowest vantage point.", unitSeconds,
			q{expr: `topk(10, max by (namespace, name) (webchecker_probe_duration_seconds{` + fleetSelector + `}))`})).
		WithRow(dashboard.NewRowBuilder("Latency")).
		WithPanel(timeseriesPanel("Probe latency", "Percentiles of the end-to-end duration of successful probes, over every checker (the histogram has no per-checker labels).", unitSeconds,
			q{`histogram_quantile(0.5, sum by (le) (rate(webchecker_probe_latency_seconds_bucket{result="success"}[$__rate_interval])))`, "p50"},
			q{`histogram_quantile(0.9, sum by (le) (rate(webchecker_probe_latency_seconds_bucket{result="success"}[$__rate_interval])))`, "p90"},
			q{`histogram_quantile(0.99, sum by (le) (rate(webchecker_probe_latency_seconds_bucket{result="success"}[$__rate_interval])))`, "p99"})).
		WithPanel(timeseriesPanel("Probe phases (p90)", "90th percentile of each phase of HTTP probes (dns, connect, tls, processing, transfer), over every checker.", unitSeconds,
			q{`histogram_quantile(0.9, sum by (le, phase) (rate(webchecker_probe_phase_seconds_bucket[$__rate_interval])))`, "{{phase}}"})).
		WithRow(dashboard.NewRowBuilder("Certificates and replicas")).
		WithPanel(tablePanel("Certificates expiring first", "Time left until the earliest certificate of each https checker's chain expires, soonest first (WebCheckerCertificateExpiring fires under the chart's threshold).", unitSeconds,
			q{expr: `sort(bottomk(20, min by (namespace, name) (webchecker_probe_ssl_earliest_cert_expiry{` + fleetSelector + `}) - time()))`})).
		WithPanel(timeseriesPanel("Checkers per replica", "WebCheckers each replica owns on the consistent-hash ring, and those it probes as one of their vantage points (the owned ones included).", unitShort,
			q{`sum by (instance) (webchecker_shard_owned_checkers)`, "{{instance}} owned"},
			q{`sum by (instance) (webchecker_shard_probed_checkers)`, "{{instance}} probed"}))
}
