package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// operatorSelector selects the replicas picked in the dashboard's instance
// variable.
const operatorSelector = `instance=~"$instance"`

// operator is the operator's own health: its probe scheduler, its status
// writes, its ring and its API client.
func operator() *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder("WebChecker / Operator").
		Uid("webchecker-operator").
		Description("The webchecker operator's own health: scheduler lag and probes in flight, status writes, ring members, rebalances and fencing, API client errors.").
		Tags([]string{"webchecker"}).
		Refresh("30s").
		Time("now-6h", "now").
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(datasourceVariable()).
		WithVariable(labelVariable("instance", "instance", "webchecker_shard_members", true)).
		WithRow(dashboard.NewRowBuilder("Scheduler")).
		WithPanel(timeseriesPanel("Scheduler lag (p99)", "How late probes start against the time they are due, per replica; it grows when the bound on probes in flight is reached (WebCheckerSchedulerFallingBehind).", unitSeconds,
			q{`histogram_quantile(0.99, sum by (instance, le) (rate(webchecker_scheduler_lag_seconds_bucket{` + operatorSelector + `}[$__rate_interval])))`, "{{instance}}"})).
		WithPanel(timeseriesPanel("Probes in flight", "Probes running now, per replica (at most what its memory budget, or --probe-workers, allows).", unitShort,
			q{`sum by (instance) (webchecker_scheduler_inflight{` + operatorSelector + `})`, "{{instance}}"})).
		WithRow(dashboard.NewRowBuilder("Status writes and API")).
		WithPanel(timeseriesPanel("Status writes by result", "WebChecker status patches per second: success, conflict (retried) and error (WebCheckerStatusWritesFailing).", unitPerSec,
			q{`sum by (result) (rate(webchecker_status_writes_total{` + operatorSelector + `}[$__rate_interval]))`, "{{result}}"})).
		WithPanel(timeseriesPanel("API client errors", "Requests to the API server per second that got no 2xx answer, by replica and code (client-go's rest_client_requests_total).", unitPerSec,
			q{`sum by (instance, code) (rate(rest_client_requests_total{` + operatorSelector + `,code!~"2.."}[$__rate_interval]))`, "{{instance}} {{code}}"})).
		WithPanel(timeseriesPanel("API client requests", "Requests to the API server per second, by replica and code.", unitPerSec,
			q{`sum by (instance, code) (rate(rest_client_requests_total{` + operatorSelector + `}[$__rate_interval]))`, "{{instance}} {{code}}"})).
		WithPanel(timeseriesPanel("Reconcile errors", "Reconciles that returned an error, per second (controller-runtime).", unitPerSec,
			q{`sum by (instance) (rate(controller_runtime_reconcile_errors_total{` + operatorSelector + `}[$__rate_interval]))`, "{{instance}}"})).
		WithRow(dashboard.NewRowBuilder("Ring")).
		WithPanel(timeseriesPanel("Ring members", "Live replicas on the consistent-hash ring as each replica sees it, and the replicas scraped; fewer members than replicas scraped is WebCheckerRingMembersMissing.", unitShort,
			q{`max by (instance) (webchecker_shard_members{` + operatorSelector + `})`, "{{instance}}"},
			q{`count(webchecker_shard_members)`, "replicas scraped"})).
		WithPanel(timeseriesPanel("Rebalances", "Changes of the ring's membership seen by each replica; each moves checkers between replicas.", unitShort,
			q{`sum by (instance) (increase(webchecker_shard_rebalances_total{` + operatorSelector + `}[$__rate_interval]))`, "{{instance}}"})).
		WithPanel(timeseriesPanel("Checkers per replica", "WebCheckers each replica owns (it writes their status), and those it probes as one of their vantage points, the owned ones included.", unitShort,
			q{`sum by (instance) (webchecker_shard_owned_checkers{` + operatorSelector + `})`, "{{instance}} owned"},
			q{`sum by (instance) (webchecker_shard_probed_checkers{` + operatorSelector + `})`, "{{instance}} probed"})).
		WithPanel(timeseriesPanel("Fenced replicas", "1 while a replica is fenced: it could not renew its Lease in time and probes nothing (WebCheckerReplicaFenced).", unitShort,
			q{`max by (instance) (webchecker_shard_fenced{` + operatorSelector + `})`, "{{instance}}"}))
}
