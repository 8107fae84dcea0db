package chart_test

import "testing"

// TestChartRulesLeaveMaintenanceOut checks the rules against checkers in a
// maintenance window (webchecker_maintenance 1, from their owner):
//   - "still-down" is down all along, in maintenance until 29m:
//     WebCheckerDown does not fire in the window and fires 5m (its for)
//     after it, like "control", down all along without windows, fires
//     after 5m;
//   - "upgraded" fails every probe in its window (until 29m) and none
//     after: no availability ratio while a window of it holds maintenance,
//     then 1 (the failures count in no window); no error budget alert
//     fires, where "control-budget", failing the same way without a
//     window, pages.
func TestChartRulesLeaveMaintenanceOut(t *testing.T) {
	const unitTest = `
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'webchecker_ready{namespace="shop",name="still-down",instance="a"}'
        values: '0x120'
      - series: 'webchecker_maintenance{namespace="shop",name="still-down",instance="a"}'
        values: '1x29 0x91'
      - series: 'webchecker_ready{namespace="shop",name="control",instance="a"}'
        values: '0x120'
      - series: 'webchecker_probes_total{namespace="shop",name="upgraded",instance="a",result="success"}'
        values: '0x29 0+4x91'
      - series: 'webchecker_probes_total{namespace="shop",name="upgraded",instance="a",result="failure"}'
        values: '0+4x29 116x91'
      - series: 'webchecker_maintenance{namespace="shop",name="upgraded",instance="a"}'
        values: '1x29 0x91'
      - series: 'webchecker_probes_total{namespace="shop",name="control-budget",instance="a",result="success"}'
        values: '0x29 0+4x91'
      - series: 'webchecker_probes_total{namespace="shop",name="control-budget",instance="a",result="failure"}'
        values: '0+4x29 116x91'
    promql_expr_test:
      - expr: ALERTS{alertname="WebCheckerDown",alertstate="firing"}
        eval_time: 20m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerDown",alertstate="firing",severity="warning",namespace="shop",name="control"}'
            value: 1
      - expr: ALERTS{alertname="WebCheckerDown",namespace="shop",name="still-down"}
        eval_time: 33m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerDown",alertstate="pending",severity="warning",namespace="shop",name="still-down"}'
            value: 1
      - expr: ALERTS{alertname="WebCheckerDown",alertstate="firing",name="still-down"}
        eval_time: 38m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerDown",alertstate="firing",severity="warning",namespace="shop",name="still-down"}'
            value: 1
      - expr: webchecker:probe_availability:ratio_rate5m{name="upgraded"}
        eval_time: 20m
        exp_samples: []
      - expr: webchecker:probe_availability:ratio_rate1h{name="upgraded"}
        eval_time: 60m
        exp_samples: []
      - expr: webchecker:probe_availability:ratio_rate5m{name="upgraded"}
        eval_time: 60m
        exp_samples:
          - labels: 'webchecker:probe_availability:ratio_rate5m{namespace="shop",name="upgraded"}'
            value: 1
      - expr: webchecker:probe_availability:ratio_rate1h{name="upgraded"}
        eval_time: 100m
        exp_samples:
          - labels: 'webchecker:probe_availability:ratio_rate1h{namespace="shop",name="upgraded"}'
            value: 1
      - expr: webchecker:probe_availability:ratio_rate1d{name="upgraded"}
        eval_time: 100m
        exp_samples:
          - labels: 'webchecker:probe_availability:ratio_rate1d{namespace="shop",name="upgraded"}'
            value: 1
      - expr: ALERTS{alertname=~"WebCheckerErrorBudgetBurning.*",name="upgraded"}
        eval_time: 40m
        exp_samples: []
      - expr: ALERTS{alertname="WebCheckerErrorBudgetBurning",alertstate="firing",name="control-budget"}
        eval_time: 20m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerErrorBudgetBurning",alertstate="firing",severity="critical",namespace="shop",name="control-budget"}'
            value: 1
`
	promtoolRuleTest(t, unitTest)
}
