package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// checkerSelector selects the one checker picked in the dashboard's
// namespace and name variables. Its owner's series (webchecker_ready) may
// come from two replicas for a moment when it moves between them, hence
// max by checker below. Its probe series come from every vantage point (a
// replica that probes it; spec.vantagePoints of them), labelled with the
// replica's shard and zone: the panels that show them per probe keep those
// two labels (byVantagePoint), so that each vantage point is one series
// with a legend of its own, across the moves of the other labels
// (instance, pod).
const checkerSelector = `namespace="$namespace",name="$name"`

// byVantagePoint aggregates a checker's probe series by vantage point.
const byVantagePoint = `max by (shard, zone) `

// vantagePointLegend names a vantage point's series; the zone is empty when
// the replica's is not known.
const vantagePointLegend = "{{shard}} {{zone}}"

// checker is the drill-down into one checker.
func checker() *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder("WebChecker / Checker").
		Uid("webchecker-checker").
		Description("One WebChecker: its quorum state (Ready), success, latency and status code by vantage point, transitions, certificate, and success and latency by address where it probes every address.").
		Tags([]string{"webchecker"}).
		Refresh("30s").
		Time("now-6h", "now").
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(datasourceVariable()).
		WithVariable(labelVariable("namespace", "namespace", "webchecker_probe_success", false)).
		WithVariable(labelVariable("name", "name", `webchecker_probe_success{namespace="$namespace"}`, false)).
		WithPanel(statPanel("Ready", "The checker's quorum state, its Ready condition: 1 True, 0 False; with spec.vantagePoints above 1, as the majority of its vantage points see it, after its thresholds (WebCheckerDown fires when it stays 0). No data while Unknown.", unitShort,
			q{expr: `max(webchecker_ready{` + checkerSelector + `})`}, thresholds("red", step{1, "green"}))).
		WithPanel(statPanel("Maintenance", "1 while one of the checker's maintenance windows is open (its Maintenance condition True): it is probed as usual, and left out of the alerts and error budgets; 0 outside them; no data for a checker without windows.", unitShort,
			q{expr: `max(webchecker_maintenance{` + checkerSelector + `})`}, thresholds("green", step{1, "blue"}))).
		WithPanel(statPanel("Dependency down", "1 while the checker fails and a checker it depends on (spec.dependsOn) is down (its Ready reason DependencyDown): the alerts page for the dependency, not for this one; no data otherwise.", unitShort,
			q{expr: `max(webchecker_dependency_down{` + checkerSelector + `})`}, thresholds("green", step{1, "orange"}))).
		WithPanel(statPanel("Vantage points up", "Vantage points (replicas probing the checker) whose latest probe succeeded.", unitShort,
			q{expr: `sum(` + byVantagePoint + `(webchecker_probe_success{` + checkerSelector + `}))`}, thresholds("red", step{1, "green"}))).
		WithPanel(statPanel("Availability", "Successful probes among all probes, of every vantage point, over the dashboard's time range.", unitRatio,
			q{expr: `sum(increase(webchecker_probes_total{` + checkerSelector + `,result="success"}[$__range])) / sum(increase(webchecker_probes_total{` + checkerSelector + `}[$__range]))`},
			thresholds("red", step{0.99, "orange"}, step{0.999, "green"})).Decimals(3)).
		WithPanel(statPanel("HTTP status", "Status code of the latest probe's final response, the highest among the vantage points; 0 when none was received.", unitShort,
			q{expr: `max(webchecker_probe_http_status_code{` + checkerSelector + `})`}, thresholds("red", step{200, "green"}, step{300, "orange"}, step{400, "red"}))).
		WithPanel(statPanel("Certificate expires in", "Time left until the earliest certificate of the server's chain expires, the soonest any vantage point is served (https only).", unitSeconds,
			q{expr: `min(webchecker_probe_ssl_earliest_cert_expiry{` + checkerSelector + `}) - time()`}, thresholds("red", step{7 * 86400, "orange"}, step{14 * 86400, "green"}))).
		WithPanel(statPanel("Last probe", "Time since the latest probe, by any vantage point, finished.", unitSeconds,
			q{expr: `time() - max(webchecker_probe_last_run_timestamp_seconds{` + checkerSelector + `})`}, thresholds("green"))).
		WithPanel(statPanel("Transitions", "Changes of the Ready condition (the quorum state) between True and False over the dashboard's time range.", unitShort,
			q{expr: `changes(max(webchecker_ready{` + checkerSelector + `})[$__range:])`}, thresholds("green", step{1, "orange"}))).
		WithPanel(timeseriesPanel("Ready and success by vantage point", "Ready: the quorum state (1 True, 0 False); In maintenance: 1 while a maintenance window is open; Dependency down: 1 while it fails with a dependency down. Each vantage point: 1 while its latest probe succeeded, 0 while it failed.", unitShort,
			q{`max(webchecker_ready{` + checkerSelector + `})`, "Ready (quorum)"},
			q{`max(webchecker_maintenance{` + checkerSelector + `})`, "In maintenance"},
			q{`max(webchecker_dependency_down{` + checkerSelector + `})`, "Dependency down"},
			q{byVantagePoint + `(webchecker_probe_success{` + checkerSelector + `})`, vantagePointLegend}).Min(0).Max(1)).
		WithPanel(timeseriesPanel("Transitions", "Changes of the Ready condition, and between up and down at each vantage point, per interval.", unitShort,
			q{`changes(max(webchecker_ready{` + checkerSelector + `})[$__rate_interval:])`, "Ready (quorum)"},
			q{`changes((` + byVantagePoint + `(webchecker_probe_success{` + checkerSelector + `}))[$__rate_interval:])`, vantagePointLegend})).
		WithPanel(timeseriesPanel("Latency by vantage point", "End-to-end duration of each vantage point's latest probe.", unitSeconds,
			q{byVantagePoint + `(webchecker_probe_duration_seconds{` + checkerSelector + `})`, vantagePointLegend})).
		WithPanel(timeseriesPanel("HTTP status code by vantage point", "Status code of the final response of each vantage point's latest probe; 0 when none was received.", unitShort,
			q{byVantagePoint + `(webchecker_probe_http_status_code{` + checkerSelector + `})`, vantagePointLegend})).
		WithPanel(timeseriesPanel("Success by address", "For a checker whose spec.addresses is Any, All or Majority: 1 while the latest probe of each address of its host name succeeded, 0 while it failed, at the vantage point where it did worst (status.addresses holds the owner's view). No data for a checker probed as a client connects (addresses First).", unitShort,
			q{`min by (address) (webchecker_probe_address_success{` + checkerSelector + `})`, "{{address}}"}).Min(0).Max(1)).
		WithPanel(timeseriesPanel("Latency by address", "For a checker whose spec.addresses is Any, All or Majority: duration of the latest probe of each address, at its slowest vantage point.", unitSeconds,
			q{`max by (address) (webchecker_probe_address_duration_seconds{` + checkerSelector + `})`, "{{address}}"})).
		WithPanel(timeseriesPanel("Probes by result", "Probes per second of every vantage point, by result.", unitPerSec,
			q{`sum by (result) (rate(webchecker_probes_total{` + checkerSelector + `}[$__rate_interval]))`, "{{result}}"})).
		WithPanel(timeseriesPanel("Probe phases, every checker (p90)", "Phase durations are measured over every checker, not per checker: this is the context this checker's latency compares with.", unitSeconds,
			q{`histogram_quantile(0.9, sum by (le, phase) (rate(webchecker_probe_phase_seconds_bucket[$__rate_interval])))`, "{{phase}}"}))
}
