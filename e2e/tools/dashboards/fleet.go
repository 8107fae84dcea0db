package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// fleetSelector selects the checkers of the namespaces picked in the
// dashboard's namespace variable.
const fleetSelector = `namespace=~"$namespace"`

// fleet is the overview of every checker: how many are up and down in each
// namespace, availability, latency, certificates close to expiry and how
// the checkers are spread over the replicas.
func fleet() *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder("WebChecker / Fleet").
		Uid("webchecker-fleet").
		Description("Every WebChecker at a glance: up and down by namespace, availability, latency, certificates, checkers per replica.").
		Tags([]string{"webchecker"}).
		Refresh("30s").
		Time("now-6h", "now").
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(datasourceVariable()).
		WithVariable(labelVariable("namespace", "namespace", "webchecker_probe_success", true)).
		WithRow(dashboard.NewRowBuilder("Checkers")).
		WithPanel(statPanel("Checkers up", "Checkers whose latest probe succeeded.", unitShort,
			q{expr: `count(max by (namespace, name) (webchecker_probe_success{` + fleetSelector + `}) == 1) or vector(0)`}, thresholds("green"))).
		WithPanel(statPanel("Checkers down", "Checkers whose latest probe failed (WebCheckerDown fires when that lasts).", unitShort,
			q{expr: `count(max by (namespace, name) (webchecker_probe_success{` + fleetSelector + `}) == 0) or vector(0)`}, thresholds("green", step{1, "red"}))).
		WithPanel(statPanel("Availability", "Successful probes among all probes over the dashboard's time range.", unitRatio,
			q{expr: `sum(increase(webchecker_probes_total{` + fleetSelector + `,result="success"}[$__range])) / sum(increase(webchecker_probes_total{` + fleetSelector + `}[$__range]))`},
			thresholds("red", step{0.99, "orange"}, step{0.999, "green"})).Decimals(3)).
		WithPanel(timeseriesPanel("Checkers up and down by namespace", "Checkers by the result of their latest probe.", unitShort,
			q{`count by (namespace) (max by (namespace, name) (webchecker_probe_success{` + fleetSelector + `}) == 1)`, "{{namespace}} up"},
			q{`count by (namespace) (max by (namespace, name) (webchecker_probe_success{` + fleetSelector + `}) == 0)`, "{{namespace}} down"})).
		WithPanel(timeseriesPanel("Availability by namespace", "Successful probes among all probes of the namespace's checkers.", unitRatio,
			q{`sum by (namespace) (rate(webchecker_probes_total{` + fleetSelector + `,result="success"}[$__rate_interval])) / sum by (namespace) (rate(webchecker_probes_total{` + fleetSelector + `}[$__rate_interval]))`, "{{namespace}}"}).
			Max(1)).
		WithPanel(tablePanel("Checkers down", "Checkers whose latest probe failed; the checker dashboard shows one in detail.", unitShort,
			q{expr: `max by (namespace, name) (webchecker_probe_http_status_code{` + fleetSelector + `}) and on (namespace, name) (max by (namespace, name) (webchecker_probe_success{` + fleetSelector + `}) == 0)`})).
		WithPanel(tablePanel("Slowest checkers", "The ten checkers whose latest probe took longest.", unitSeconds,
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
		WithPanel(timeseriesPanel("Checkers per replica", "WebCheckers each replica owns on the consistent-hash ring.", unitShort,
			q{`sum by (instance) (webchecker_shard_owned_checkers)`, "{{instance}}"}))
}
