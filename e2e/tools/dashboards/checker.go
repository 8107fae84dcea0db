package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// checkerSelector selects the one checker picked in the dashboard's
// namespace and name variables. Its series may come from two replicas for
// a moment when it moves between them, hence max/min by checker below.
const checkerSelector = `namespace="$namespace",name="$name"`

// checker is the drill-down into one checker.
func checker() *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder("WebChecker / Checker").
		Uid("webchecker-checker").
		Description("One WebChecker: success, latency, status code, transitions, certificate.").
		Tags([]string{"webchecker"}).
		Refresh("30s").
		Time("now-6h", "now").
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(datasourceVariable()).
		WithVariable(labelVariable("namespace", "namespace", "webchecker_probe_success", false)).
		WithVariable(labelVariable("name", "name", `webchecker_probe_success{namespace="$namespace"}`, false)).
		WithPanel(statPanel("Up", "Whether the latest probe succeeded (1) or failed (0).", unitShort,
			q{expr: `max(webchecker_probe_success{` + checkerSelector + `})`}, thresholds("red", step{1, "green"}))).
		WithPanel(statPanel("Availability", "Successful probes among all probes over the dashboard's time range.", unitRatio,
			q{expr: `sum(increase(webchecker_probes_total{` + checkerSelector + `,result="success"}[$__range])) / sum(increase(webchecker_probes_total{` + checkerSelector + `}[$__range]))`},
			thresholds("red", step{0.99, "orange"}, step{0.999, "green"})).Decimals(3)).
		WithPanel(statPanel("HTTP status", "Status code of the latest probe's final response; 0 when none was received.", unitShort,
			q{expr: `max(webchecker_probe_http_status_code{` + checkerSelector + `})`}, thresholds("red", step{200, "green"}, step{300, "orange"}, step{400, "red"}))).
		WithPanel(statPanel("Certificate expires in", "Time left until the earliest certificate of the server's chain expires (https only).", unitSeconds,
			q{expr: `min(webchecker_probe_ssl_earliest_cert_expiry{` + checkerSelector + `}) - time()`}, thresholds("red", step{7 * 86400, "orange"}, step{14 * 86400, "green"}))).
		WithPanel(statPanel("Last probe", "Time since the latest probe finished.", unitSeconds,
			q{expr: `time() - max(webchecker_probe_last_run_timestamp_seconds{` + checkerSelector + `})`}, thresholds("green"))).
		WithPanel(statPanel("Transitions", "Changes between up and down over the dashboard's time range.", unitShort,
			q{expr: `changes(max(webchecker_probe_success{` + checkerSelector + `})[$__range:])`}, thresholds("green", step{1, "orange"}))).
		WithPanel(timeseriesPanel("Success", "1 while the latest probe succeeded, 0 while it failed.", unitShort,
			q{`max(webchecker_probe_success{` + checkerSelector + `})`, "up"}).Min(0).Max(1)).
		WithPanel(timeseriesPanel("Transitions", "Changes between up and down per interval.", unitShort,
			q{`changes(max(webchecker_probe_success{` + checkerSelector + `})[$__rate_interval:])`, "transitions"})).
		WithPanel(timeseriesPanel("Latency", "End-to-end duration of the latest probe.", unitSeconds,
			q{`max(webchecker_probe_duration_seconds{` + checkerSelector + `})`, "duration"})).
		WithPanel(timeseriesPanel("HTTP status code", "Status code of the final response; 0 when none was received.", unitShort,
			q{`max(webchecker_probe_http_status_code{` + checkerSelector + `})`, "status"})).
		WithPanel(timeseriesPanel("Probes by result", "Probes per second, by result.", unitPerSec,
			q{`sum by (result) (rate(webchecker_probes_total{` + checkerSelector + `}[$__rate_interval]))`, "{{result}}"})).
		WithPanel(timeseriesPanel("Probe phases, every checker (p90)", "Phase durations are measured over every checker, not per checker: this is the context this checker's latency compares with.", unitSeconds,
			q{`histogram_quantile(0.9, sum by (le, phase) (rate(webchecker_probe_phase_seconds_bucket[$__rate_interval])))`, "{{phase}}"}))
}
