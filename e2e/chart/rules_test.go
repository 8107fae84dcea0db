package chart_test

import "testing"

// The promtool unit tests below (promtoolRuleTest) run against the chart's
// PrometheusRule with the default values: objective 0.995 (error budget
// 0.5%), page for 2m, ticket for 1h, scheduler lag over 1s for 10m,
// status writes failing for 15m, ring members missing for 5m. Each alert is
// shown firing, not firing, and pending (not yet firing) before its `for`.

// TestChartAvailabilityRecordingRules checks the availability recording
// rules: successful probes among all probes of a checker, over every window,
// also for a checker whose counters moved to another replica (and started
// over there), and for one probed from three vantage points, each with
// counters of its own (labels shard and zone), one of them failing.
func TestChartAvailabilityRecordingRules(t *testing.T) {
	unitTest := `
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      # One success and one failure a minute (availability 0.5, exact in
      # floating point, whatever the extrapolation of rate()).
      - series: 'webchecker_probes_total{namespace="shop",name="steady",instance="a",result="success"}'
        values: '0+1x60'
      - series: 'webchecker_probes_total{namespace="shop",name="steady",instance="a",result="failure"}'
        values: '0+1x60'
      # The same, probed by replica a until 30m, then by replica b.
      - series: 'webchecker_probes_total{namespace="shop",name="moved",instance="a",result="success"}'
        values: '0+1x30'
      - series: 'webchecker_probes_total{namespace="shop",name="moved",instance="a",result="failure"}'
        values: '0+1x30'
      - series: 'webchecker_probes_total{namespace="shop",name="moved",instance="b",result="success"}'
        values: '_x31 0+1x29'
      - series: 'webchecker_probes_total{namespace="shop",name="moved",instance="b",result="failure"}'
        values: '_x31 0+1x29'
      # Never fails.
      - series: 'webchecker_probes_total{namespace="shop",name="perfect",instance="a",result="success"}'
        values: '0+2x60'
      - series: 'webchecker_probes_total{namespace="shop",name="perfect",instance="a",result="failure"}'
        values: '0x60'
      # Three vantage points (shard, zone), one failing every probe: two
      # thirds of all its probes succeed.
      - series: 'webchecker_probes_total{namespace="shop",name="quorum",instance="a",shard="a",zone="z1",result="success"}'
        values: '0+1x60'
      - series: 'webchecker_probes_total{namespace="shop",name="quorum",instance="a",shard="a",zone="z1",result="failure"}'
        values: '0x60'
      - series: 'webchecker_probes_total{namespace="shop",name="quorum",instance="b",shard="b",zone="z2",result="success"}'
        values: '0+1x60'
      - series: 'webchecker_probes_total{namespace="shop",name="quorum",instance="b",shard="b",zone="z2",result="failure"}'
        values: '0x60'
      - series: 'webchecker_probes_total{namespace="shop",name="quorum",instance="c",shard="c",zone="z3",result="success"}'
        values: '0x60'
      - series: 'webchecker_probes_total{namespace="shop",name="quorum",instance="c",shard="c",zone="z3",result="failure"}'
        values: '0+1x60'
    promql_expr_test:
` + availabilityCases + `
`
	promtoolRuleTest(t, unitTest)
}

// availabilityCases expects 0.5 for steady and moved, 1 for perfect and
// 2/3 for quorum (rounded: a third is no exact float) from every
// availability recording rule at 60m.
var availabilityCases = func() string {
	var out string
	for _, window := range []string{"5m", "30m", "1h", "6h", "1d", "3d", "30d"} {
		out += `
      - expr: webchecker:probe_availability:ratio_rate` + window + `{name!="quorum"}
        eval_time: 60m
        exp_samples:
          - labels: 'webchecker:probe_availability:ratio_rate` + window + `{namespace="shop",name="steady"}'
            value: 0.5
          - labels: 'webchecker:probe_availability:ratio_rate` + window + `{namespace="shop",name="moved"}'
            value: 0.5
          - labels: 'webchecker:probe_availability:ratio_rate` + window + `{namespace="shop",name="perfect"}'
            value: 1
      - expr: round(webchecker:probe_availability:ratio_rate` + window + `{name="quorum"}, 0.001)
        eval_time: 60m
        exp_samples:
          - labels: '{namespace="shop",name="quorum"}'
            value: 0.667`
	}
	return out
}()

// TestChartErrorBudgetAlerts checks the burn-rate alerts: a checker in a
// full outage from 30m pages after 2m and, an hour later, opens a ticket; one
// that fails 1% of its probes (2x the budget) opens a ticket after an hour
// and never pages; one that fails 0.1% (a fifth of the budget) alerts on
// nothing. Checkers with their own objective (webchecker_slo_objective,
// from their label) are judged against it: failing 0.1% against 99.95%
// (2x its budget) opens a ticket, failing 1% against 98% (half of it)
// nothing.
func TestChartErrorBudgetAlerts(t *testing.T) {
	const unitTest = `
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'webchecker_probes_total{namespace="shop",name="outage",result="success"}'
        values: '0+4x29 116x90'
      - series: 'webchecker_probes_total{namespace="shop",name="outage",result="failure"}'
        values: '0x29 0+4x90'
      - series: 'webchecker_probes_total{namespace="shop",name="degraded",result="success"}'
        values: '0+99x120'
      - series: 'webchecker_probes_total{namespace="shop",name="degraded",result="failure"}'
        values: '0+1x120'
      - series: 'webchecker_probes_total{namespace="shop",name="healthy",result="success"}'
        values: '0+999x120'
      - series: 'webchecker_probes_total{namespace="shop",name="healthy",result="failure"}'
        values: '0+1x120'
      - series: 'webchecker_probes_total{namespace="shop",name="strict",result="success"}'
        values: '0+999x120'
      - series: 'webchecker_probes_total{namespace="shop",name="strict",result="failure"}'
        values: '0+1x120'
      - series: 'webchecker_slo_objective{namespace="shop",name="strict",job="webchecker",instance="a"}'
        values: '0.9995x120'
      - series: 'webchecker_probes_total{namespace="shop",name="relaxed",result="success"}'
        values: '0+99x120'
      - series: 'webchecker_probes_total{namespace="shop",name="relaxed",result="failure"}'
        values: '0+1x120'
      - series: 'webchecker_slo_objective{namespace="shop",name="relaxed",job="webchecker",instance="a"}'
        values: '0.98x120'
    # Pending, not firing, just before the for has passed.
    promql_expr_test:
      - expr: ALERTS{alertname="WebCheckerErrorBudgetBurning"}
        eval_time: 32m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerErrorBudgetBurning",alertstate="pending",severity="critical",namespace="shop",name="outage"}'
            value: 1
      - expr: ALERTS{alertname="WebCheckerErrorBudgetBurningSlowly"}
        eval_time: 50m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerErrorBudgetBurningSlowly",alertstate="pending",severity="warning",namespace="shop",name="degraded"}'
            value: 1
          - labels: 'ALERTS{alertname="WebCheckerErrorBudgetBurningSlowly",alertstate="pending",severity="warning",namespace="shop",name="outage"}'
            value: 1
          - labels: 'ALERTS{alertname="WebCheckerErrorBudgetBurningSlowly",alertstate="pending",severity="warning",namespace="shop",name="strict"}'
            value: 1
      - expr: webchecker:slo_objective
        eval_time: 10m
        exp_samples:
          - labels: 'webchecker:slo_objective{namespace="shop",name="outage"}'
            value: 0.995
          - labels: 'webchecker:slo_objective{namespace="shop",name="degraded"}'
            value: 0.995
          - labels: 'webchecker:slo_objective{namespace="shop",name="healthy"}'
            value: 0.995
          - labels: 'webchecker:slo_objective{namespace="shop",name="strict"}'
            value: 0.9995
          - labels: 'webchecker:slo_objective{namespace="shop",name="relaxed"}'
            value: 0.98
    alert_rule_test:
      - eval_time: 29m
        alertname: WebCheckerErrorBudgetBurning
        exp_alerts: []
      # Burning since 31m: pending, not firing, before 2m have passed.
      - eval_time: 32m
        alertname: WebCheckerErrorBudgetBurning
        exp_alerts: []
      - eval_time: 34m
        alertname: WebCheckerErrorBudgetBurning
        exp_alerts:
          - exp_labels: {severity: critical, namespace: shop, name: outage}
            exp_annotations:
              summary: WebChecker shop/outage is burning its error budget fast
              description: "The probes of WebChecker shop/outage fail 14.4 times (over 1h) or 6 times (over 6h) as often as its 0.995 objective allows: at this rate its 30-day error budget is gone within 2 or 5 days."
              runbook: RUNBOOK(WebCheckerErrorBudgetBurning)
      - eval_time: 120m
        alertname: WebCheckerErrorBudgetBurning
        exp_alerts:
          - exp_labels: {severity: critical, namespace: shop, name: outage}
            exp_annotations:
              summary: WebChecker shop/outage is burning its error budget fast
              description: "The probes of WebChecker shop/outage fail 14.4 times (over 1h) or 6 times (over 6h) as often as its 0.995 objective allows: at this rate its 30-day error budget is gone within 2 or 5 days."
              runbook: RUNBOOK(WebCheckerErrorBudgetBurning)
      # degraded burns 2x its budget from the start: pending for an hour.
      - eval_time: 50m
        alertname: WebCheckerErrorBudgetBurningSlowly
        exp_alerts: []
      - eval_time: 70m
        alertname: WebCheckerErrorBudgetBurningSlowly
        exp_alerts:
          - exp_labels: {severity: warning, namespace: shop, name: degraded}
            exp_annotations:
              summary: WebChecker shop/degraded is using up its error budget
              description: "More probes of WebChecker shop/degraded failed over 3 days (and still over the last 6 hours) than its 0.995 objective allows over 30 days."
              runbook: RUNBOOK(WebCheckerErrorBudgetBurningSlowly)
          - exp_labels: {severity: warning, namespace: shop, name: strict}
            exp_annotations:
              summary: WebChecker shop/strict is using up its error budget
              description: "More probes of WebChecker shop/strict failed over 3 days (and still over the last 6 hours) than its 0.9995 objective allows over 30 days."
              runbook: RUNBOOK(WebCheckerErrorBudgetBurningSlowly)
      - eval_time: 120m
        alertname: WebCheckerErrorBudgetBurningSlowly
        exp_alerts:
          - exp_labels: {severity: warning, namespace: shop, name: degraded}
            exp_annotations:
              summary: WebChecker shop/degraded is using up its error budget
              description: "More probes of WebChecker shop/degraded failed over 3 days (and still over the last 6 hours) than its 0.995 objective allows over 30 days."
              runbook: RUNBOOK(WebCheckerErrorBudgetBurningSlowly)
          - exp_labels: {severity: warning, namespace: shop, name: outage}
            exp_annotations:
              summary: WebChecker shop/outage is using up its error budget
              description: "More probes of WebChecker shop/outage failed over 3 days (and still over the last 6 hours) than its 0.995 objective allows over 30 days."
              runbook: RUNBOOK(WebCheckerErrorBudgetBurningSlowly)
          - exp_labels: {severity: warning, namespace: shop, name: strict}
            exp_annotations:
              summary: WebChecker shop/strict is using up its error budget
              description: "More probes of WebChecker shop/strict failed over 3 days (and still over the last 6 hours) than its 0.9995 objective allows over 30 days."
              runbook: RUNBOOK(WebCheckerErrorBudgetBurningSlowly)
`
	promtoolRuleTest(t, unitTest)
}

// TestChartOperatorAlerts checks the alerts on the operator's own health.
func TestChartOperatorAlerts(t *testing.T) {
	const unitTest = `
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      # Replica a starts every probe within 10ms; replica b between 1s and
      # 5s late from the start.
      - series: 'webchecker_scheduler_lag_seconds_bucket{job="webchecker",instance="a",le="0.01"}'
        values: '0+10x40'
      - series: 'webchecker_scheduler_lag_seconds_bucket{job="webchecker",instance="a",le="1"}'
        values: '0+10x40'
      - series: 'webchecker_scheduler_lag_seconds_bucket{job="webchecker",instance="a",le="5"}'
        values: '0+10x40'
      - series: 'webchecker_scheduler_lag_seconds_bucket{job="webchecker",instance="a",le="+Inf"}'
        values: '0+10x40'
      - series: 'webchecker_scheduler_lag_seconds_bucket{job="webchecker",instance="b",le="0.01"}'
        values: '0x40'
      - series: 'webchecker_scheduler_lag_seconds_bucket{job="webchecker",instance="b",le="1"}'
        values: '0x40'
      - series: 'webchecker_scheduler_lag_seconds_bucket{job="webchecker",instance="b",le="5"}'
        values: '0+10x40'
      - series: 'webchecker_scheduler_lag_seconds_bucket{job="webchecker",instance="b",le="+Inf"}'
        values: '0+10x40'
      # Status writes: a never fails, b fails all along, c fails once.
      - series: 'webchecker_status_writes_total{job="webchecker",instance="a",result="error"}'
        values: '0x40'
      - series: 'webchecker_status_writes_total{job="webchecker",instance="b",result="error"}'
        values: '0+1x40'
      - series: 'webchecker_status_writes_total{job="webchecker",instance="c",result="error"}'
        values: '0x5 1x35'
      # Ring members: in job webchecker, replica c sees only two of the
      # three; in job other, both replicas see both.
      - series: 'webchecker_shard_members{job="webchecker",instance="a"}'
        values: '3x40'
      - series: 'webchecker_shard_members{job="webchecker",instance="b"}'
        values: '3x40'
      - series: 'webchecker_shard_members{job="webchecker",instance="c"}'
        values: '2x40'
      - series: 'webchecker_shard_members{job="other",instance="d"}'
        values: '2x40'
      - series: 'webchecker_shard_members{job="other",instance="e"}'
        values: '2x40'
      # Fencing: a is fenced for a minute only (a renewal hiccup); b from
      # 3m on.
      - series: 'webchecker_shard_fenced{job="webchecker",instance="a"}'
        values: '0 1 0x38'
      - series: 'webchecker_shard_fenced{job="webchecker",instance="b"}'
        values: '0x2 1x38'
    # Pending, not firing, just before the for has passed.
    promql_expr_test:
      - expr: ALERTS{alertname="WebCheckerSchedulerFallingBehind"}
        eval_time: 10m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerSchedulerFallingBehind",alertstate="pending",severity="warning",job="webchecker",instance="b"}'
            value: 1
      - expr: ALERTS{alertname="WebCheckerStatusWritesFailing"}
        eval_time: 15m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerStatusWritesFailing",alertstate="pending",severity="warning",job="webchecker",instance="b"}'
            value: 1
      - expr: ALERTS{alertname="WebCheckerRingMembersMissing"}
        eval_time: 4m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerRingMembersMissing",alertstate="pending",severity="warning",job="webchecker"}'
            value: 1
    alert_rule_test:
      # Lagging from 1m: pending until 11m.
      - eval_time: 10m
        alertname: WebCheckerSchedulerFallingBehind
        exp_alerts: []
      - eval_time: 12m
        alertname: WebCheckerSchedulerFallingBehind
        exp_alerts:
          - exp_labels: {severity: warning, job: webchecker, instance: b}
            exp_annotations:
              summary: Replica b starts probes late
              description: "The 99th percentile of how late replica b starts probes against their due time has been over 1s for 10m."
              runbook: RUNBOOK(WebCheckerSchedulerFallingBehind)
      # Failing from 1m: pending until 16m; c's single error never fires.
      - eval_time: 15m
        alertname: WebCheckerStatusWritesFailing
        exp_alerts: []
      - eval_time: 17m
        alertname: WebCheckerStatusWritesFailing
        exp_alerts:
          - exp_labels: {severity: warning, job: webchecker, instance: b}
            exp_annotations:
              summary: Replica b fails to write WebChecker statuses
              description: "Status patches of replica b have kept failing for 15m: kubectl get webcheckers shows stale results."
              runbook: RUNBOOK(WebCheckerStatusWritesFailing)
      # Missing from 0m: pending until 5m.
      - eval_time: 4m
        alertname: WebCheckerRingMembersMissing
        exp_alerts: []
      - eval_time: 6m
        alertname: WebCheckerRingMembersMissing
        exp_alerts:
          - exp_labels: {severity: warning, job: webchecker}
            exp_annotations:
              summary: A webchecker replica sees fewer ring members than replicas run
              description: "A replica of job webchecker sees 2 members on the ring, fewer than the replicas scraped, for 5m: the checkers of the missing replica are probed by another one or by none."
              runbook: RUNBOOK(WebCheckerRingMembersMissing)
      # Fenced from 3m: pending until 5m; a's minute never fires.
      - eval_time: 4m
        alertname: WebCheckerReplicaFenced
        exp_alerts: []
      - eval_time: 6m
        alertname: WebCheckerReplicaFenced
        exp_alerts:
          - exp_labels: {severity: warning, job: webchecker, instance: b}
            exp_annotations:
              summary: Replica b is fenced and probes nothing
              description: "Replica b has been fenced for 2m: it could not renew its Lease in time, so it probes and writes nothing, and the other replicas have taken its checkers over."
              runbook: RUNBOOK(WebCheckerReplicaFenced)
`
	promtoolRuleTest(t, unitTest)
}
